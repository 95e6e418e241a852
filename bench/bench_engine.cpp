// Engine throughput on the cpu device:
//  - conv/3x3/*: oneDNN 3x3 convolutions, forward and backward (GFLOP/s);
//  - layer/<model>/<kind> <shape>/{fwd,bwd}: each distinct layer of a CIFAR
//    ResNet, run through the same Layer code the executor uses;
//  - train_step/<model>/<batch>: one whole training iteration through the
//    planner, executor and allocator (images/s);
//  - plan/<model>/<batch>: the planner alone (and plan+replay: the dry run),
//    with oneDNN's workspace queries cached after the first call.
//
//   build/bench/bench_engine --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>
#include <set>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/memory_plan.h"
#include "engine/plan/planner.h"
#include "engine/run/trainer.h"
#include "models/registry.h"

namespace tidepool {
namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : v) x = u(rng);
  return v;
}

CpuKernels& kernels() {
  static CpuKernels k;
  return k;
}

void conv3x3(benchmark::State& state, ConvPass pass, ConvScheme scheme) {
  ConvShape s;
  s.n = state.range(0), s.c = s.k = state.range(1), s.h = s.w = state.range(2);
  s.r = s.s = 3, s.pad_h = s.pad_w = 1;
  CpuKernels& k = kernels();
  auto x = random_floats(s.n * s.c * s.h * s.w, 1), w = random_floats(s.weight_numel(), 2);
  auto y = random_floats(s.n * s.k * s.out_h() * s.out_w(), 3), dw = w;
  std::vector<std::byte> ws(k.conv_workspace_bytes(s, scheme, pass));
  for (auto _ : state) {
    switch (pass) {
      case ConvPass::forward: k.conv_forward(s, scheme, x.data(), w.data(), nullptr, y.data(), ws.data()); break;
      case ConvPass::backward_data: k.conv_backward_data(s, scheme, y.data(), w.data(), x.data(), ws.data()); break;
      case ConvPass::backward_weights:
        k.conv_backward_weights(s, scheme, x.data(), y.data(), dw.data(), nullptr, ws.data());
        break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["workspace_KiB"] = static_cast<double>(ws.size()) / 1024;
}

void register_convs() {
  const std::vector<std::vector<std::int64_t>> shapes = {
      {128, 16, 32}, {128, 32, 16}, {128, 64, 8},  // resnet20's three stages
      {32, 64, 32},  {32, 128, 16}, {32, 256, 8}, {32, 512, 4}};  // resnet18 (CIFAR)
  for (auto scheme : {ConvScheme::p, ConvScheme::m})
    for (auto [pass, name] : {std::pair{ConvPass::forward, "fwd"}, std::pair{ConvPass::backward_data, "bwd_data"},
                              std::pair{ConvPass::backward_weights, "bwd_weights"}}) {
      const std::string label = std::string("conv/3x3/") + name + (scheme == ConvScheme::p ? "/p" : "/m");
      auto* b = benchmark::RegisterBenchmark(label.c_str(), conv3x3, pass, scheme);
      b->ArgNames({"n", "c", "hw"})->Unit(benchmark::kMillisecond)->UseRealTime();
      for (const auto& s : shapes) b->Args(s);
    }
}

// One layer of a network with every buffer it needs, on the host.
struct LayerBench {
  const Layer* layer = nullptr;
  std::vector<Shape> inputs;
  Shape output;
  std::vector<std::vector<float>> in, params, grads, saved;
  std::vector<std::vector<std::byte>> workspace;  // fwd, bwd
  std::vector<float> out, dout;
  std::vector<std::vector<float>> din;
  std::vector<std::int32_t> labels;

  LayerArgs args(bool forward) {
    LayerArgs a;
    a.channel_block = kernels().channel_block();  // the layout a training step uses
    a.input_shapes = inputs;
    a.output_shape = output;
    for (std::size_t i = 0; i < in.size(); ++i)
      a.inputs.push_back(layer->input_is_index(static_cast<int>(i)) ? static_cast<const void*>(labels.data())
                                                                     : in[i].data());
    a.output = out.data();
    for (auto& p : params) a.params.push_back(p.data());
    for (auto& g : grads) a.param_grads.push_back(g.data());
    for (auto& s : saved) a.saved.push_back(s.data());
    a.workspace = workspace[forward ? 0 : 1].data();
    if (!forward) {
      a.output_grad = dout.data();
      for (std::size_t i = 0; i < din.size(); ++i)
        a.input_grads.push_back(layer->input_is_index(static_cast<int>(i)) ? nullptr : din[i].data());
    }
    return a;
  }
};

void register_layers(const std::string& model, std::int64_t batch) {
  static std::vector<std::unique_ptr<Network>> nets;
  nets.push_back(std::make_unique<Network>(models::make_model(model, models::InputKind::cifar, 10)));
  const Network& net = *nets.back();
  const NetworkShapes shapes = net.shapes(batch);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < net.nodes().size(); ++i) {
    const Layer& layer = *net.nodes()[i].layer;
    const auto& in = shapes.node_inputs[i];
    const std::string key = std::string(layer.kind()) + " " + in[0].str() + "->" + shapes.node_outputs[i].str();
    if (!seen.insert(key).second) continue;
    auto lb = std::make_shared<LayerBench>();
    lb->layer = &layer;
    lb->inputs = in;
    lb->output = shapes.node_outputs[i];
    for (const Shape& s : in) {
      lb->in.push_back(random_floats(s.numel(), 4));
      lb->din.emplace_back(s.numel());
    }
    lb->labels.assign(batch, 1);
    for (const ParamSpec& p : layer.params(in)) {
      lb->params.push_back(random_floats(p.shape.numel(), 5));
      lb->grads.emplace_back(p.shape.numel());
    }
    const std::int64_t block = kernels().channel_block();
    for (const SavedSpec& s : layer.saved(in, block, kernels())) lb->saved.emplace_back((s.bytes + 3) / 4);
    for (Pass pass : {Pass::forward, Pass::backward})
      lb->workspace.emplace_back(layer.workspace_bytes(in, pass, ConvScheme::p, block, DType::f32, kernels()));
    lb->out.resize(lb->output.numel());
    lb->dout = random_floats(lb->output.numel(), 6);
    const double flops = layer.forward_flops(in);
    for (bool forward : {true, false}) {
      const std::string name = "layer/" + model + "/" + key + (forward ? "/fwd" : "/bwd");
      benchmark::RegisterBenchmark(name.c_str(), [lb, forward, flops](benchmark::State& state) {
        const LayerArgs a = lb->args(forward);
        if (!forward) lb->layer->forward(kernels(), lb->args(true));  // saved state for backward
        for (auto _ : state) {
          if (forward)
            lb->layer->forward(kernels(), a);
          else
            lb->layer->backward(kernels(), a);
          benchmark::ClobberMemory();
        }
        // Backward of conv and linear is two products of the forward's size.
        if (flops > 0)
          state.counters["GFLOP/s"] = benchmark::Counter((forward ? 1 : 2) * flops * 1e-9,
                                                         benchmark::Counter::kIsIterationInvariantRate);
      })->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
}

void train_step(benchmark::State& state, std::string model) {
  const std::int64_t batch = state.range(0);
  const Network net = models::make_model(model, models::InputKind::cifar, 10);
  CpuDevice device;
  Trainer trainer(device, net, {.batch = batch, .seed = 1});
  const auto images = random_floats(batch * 3 * 32 * 32, 7);
  std::vector<std::int32_t> labels(batch);
  for (std::int64_t i = 0; i < batch; ++i) labels[i] = static_cast<std::int32_t>(i % 10);
  trainer.train_step(images.data(), labels.data());  // warm-up: oneDNN compiles its kernels
  for (auto _ : state) trainer.train_step(images.data(), labels.data());
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["pool_MiB"] = static_cast<double>(trainer.memory().pool_bytes) / (1 << 20);
  state.counters["peak_load_MiB"] = static_cast<double>(trainer.memory().peak_load_bytes()) / (1 << 20);
}

// One schedule (`whole` false), or the whole MemoryPlan a run makes: both
// schedules, their pool searches, the fit checks and parking.
void plan_time(benchmark::State& state, std::string model, models::InputKind input, bool whole) {
  const std::int64_t batch = state.range(0);
  const Network net = models::make_model(model, input, input == models::InputKind::cifar ? 10 : 1000);
  const MemorySettings settings{.mode = OffloadMode::all};
  plan_schedule(net, batch, {.memory = settings}, kernels());  // fills oneDNN's primitive-descriptor cache
  std::size_t steps = 0;
  for (auto _ : state) {
    if (whole) {
      const MemoryPlan p = plan_memory(net, batch, settings, kernels());
      steps = p.train.steps.size();
      benchmark::DoNotOptimize(p.pool_bytes);
    } else {
      const Schedule s = plan_schedule(net, batch, {.memory = settings}, kernels());
      steps = s.steps.size();
      benchmark::DoNotOptimize(s.peak_load_bytes);
    }
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["layers"] = static_cast<double>(net.nodes().size());
}

}  // namespace
}  // namespace tidepool

int main(int argc, char** argv) {
  using namespace tidepool;
  register_convs();
  register_layers("resnet20", 128);
  benchmark::RegisterBenchmark("train_step/resnet20", train_step, std::string("resnet20"))
      ->ArgName("batch")->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);
  benchmark::RegisterBenchmark("train_step/resnet18", train_step, std::string("resnet18"))
      ->ArgName("batch")->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
  benchmark::RegisterBenchmark("plan/resnet152_imagenet", plan_time, std::string("resnet152"),
                               models::InputKind::imagenet, false)
      ->ArgName("batch")->Arg(32)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("memory_plan/resnet152_imagenet", plan_time, std::string("resnet152"),
                               models::InputKind::imagenet, true)
      ->ArgName("batch")->Arg(32)->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
