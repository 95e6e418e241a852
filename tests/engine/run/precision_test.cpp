// --precision bf16 and fp16 end to end on the cpu device: activations and
// their gradients are stored in 16 bits (the plan says so and halves their
// bytes), the parameters stay bit-identical across offload modes,
// heuristics, transfers and compression within each precision, and each
// layer's gradient follows fp32's within 16-bit rounding. fp16's dynamic
// loss scaling skips the steps whose gradients overflow, without touching
// the parameters, and halves its scale; without it, fp16 loses the small
// gradients that scaling keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/planner.h"
#include "engine/step_calls/layer_args.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::quadrant_batch;

std::uint64_t trained_checksum(const Network& net, MemorySettings m) {
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .memory = m, .seed = 7});
  for (unsigned i = 0; i < 3; ++i) {
    const Batch b = quadrant_batch(8, 10 + i);
    trainer.train_step(b.images.data(), b.labels.data());
  }
  return trainer.param_checksum();
}

class SixteenBit : public ::testing::TestWithParam<Precision> {};
INSTANTIATE_TEST_SUITE_P(Precision, SixteenBit, ::testing::Values(Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST_P(SixteenBit, ParametersAreBitIdenticalInEveryModeHeuristicAndTransfer) {
  const Network net = testing::residual_net();
  const MemorySettings bf16{.precision = GetParam()};
  const std::uint64_t base = trained_checksum(net, bf16);
  EXPECT_NE(base, trained_checksum(net, {}))
      << "16 bits round every activation: its parameters cannot be fp32's";
  for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv, OffloadMode::aconv})
    for (TransferMode transfer : {TransferMode::sync, TransferMode::async})
      for (const char* heuristic : {"best-fit", "first-fit", "cnmem"}) {
        MemorySettings m = bf16;
        m.mode = mode;
        m.transfer = transfer;
        m.heuristic = heuristic;
        EXPECT_EQ(trained_checksum(net, m), base)
            << to_string(mode) << ", " << to_string(transfer) << ", " << heuristic;
      }
  MemorySettings compressed = bf16;
  compressed.mode = OffloadMode::all;
  compressed.compress = true;
  EXPECT_EQ(trained_checksum(net, compressed), base) << "16-bit values zero-value compressed in pairs";
  if (GetParam() == Precision::fp16)
    EXPECT_NE(base, trained_checksum(net, {.precision = Precision::bf16})) << "fp16 is not bf16";
}

// The layers' outputs it offloads halve; the images stay f32 (the loader's)
// and so do the few bytes layers save for backward (max-pool indices).
TEST(Precision, PlanStoresActivationsAndTheirGradientsIn16BitsAndHalvesWhatIsOffloaded) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  auto offloaded_bytes = [&](Precision p) {
    const Schedule s =
        plan_schedule(net, 8, {.memory = {.precision = p, .mode = OffloadMode::all}}, kernels);
    std::size_t bytes = 0;
    for (const NodeTensors& nt : s.nodes)
      if (s.tensors[nt.output].offloaded) bytes += s.tensors[nt.output].info.bytes();
    for (const PlannedTensor& t : s.tensors) {
      const TensorInfo& i = t.info;
      if (i.role == Role::weight || i.role == Role::weight_gradient || i.role == Role::optimizer_state)
        EXPECT_EQ(i.dtype, DType::f32) << i.name << ": the master copy stays f32";
      if (i.role == Role::activation_gradient) EXPECT_EQ(i.dtype, activation_dtype(p)) << i.name;
    }
    EXPECT_EQ(s.tensors[s.loss].info.dtype, DType::f32) << "the host reads the loss as f32";
    EXPECT_EQ(s.tensors[s.data].info.dtype, DType::f32) << "the loader's images";
    return bytes;
  };
  const std::size_t fp32 = offloaded_bytes(Precision::fp32);
  ASSERT_GT(fp32, 0u);
  EXPECT_EQ(offloaded_bytes(Precision::bf16) * 2, fp32);
  EXPECT_EQ(offloaded_bytes(Precision::fp16) * 2, fp32);
}

// fp16's update needs a flag in device memory: the plan has it, alive
// around the update alone, and no other precision has one.
TEST(Precision, OnlyFp16PlansTheUpdatesOverflowFlag) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    const Schedule s = plan_schedule(net, 8, {.memory = {.precision = p}}, kernels);
    if (p != Precision::fp16) {
      EXPECT_EQ(s.overflow, -1) << to_string(p);
      continue;
    }
    ASSERT_GE(s.overflow, 0);
    EXPECT_EQ(s.tensors[s.overflow].info.bytes(), sizeof(float));
    std::vector<StepKind> around;
    for (const Step& st : s.steps)
      if (st.tensor == s.overflow || st.kind == StepKind::update) around.push_back(st.kind);
    EXPECT_EQ(around, (std::vector<StepKind>{StepKind::alloc, StepKind::update, StepKind::free}));
    const Schedule eval = plan_schedule(net, 8, {.phase = Phase::eval, .memory = {.precision = p}}, kernels);
    EXPECT_EQ(eval.overflow, -1) << "evaluation updates nothing";
  }
}

// Each step's f32 copies sit at the front of its workspace, inside it, and
// never overlap.
TEST(Precision, F32CopiesFitTheirStepsWorkspace) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  const Schedule s = plan_schedule(net, 8, {.memory = {.precision = Precision::bf16}}, kernels);
  int copies = 0;
  for (const Step& st : s.steps) {
    if (st.kind != StepKind::forward && st.kind != StepKind::backward) continue;
    const bool forward = st.kind == StepKind::forward;
    const NodeTensors& nt = s.nodes[st.node];
    if (nt.computes_16bit) continue;  // the table's own bf16 kernels (AVX-512 BF16): no copies
    const int ws = forward ? nt.forward_workspace : nt.backward_workspace;
    ASSERT_GE(ws, 0) << "every 16-bit step has its copies in a workspace";
    const std::size_t size = s.tensors[ws].info.bytes();
    // Addresses: tensor t at (t + 1) << 32, so each is far from the others.
    const LayerCall call = layer_call(s, *net.nodes()[st.node].layer, st.node, forward, [](int t) -> std::byte* {
      return t < 0 ? nullptr : reinterpret_cast<std::byte*>((static_cast<std::uintptr_t>(t) + 1) << 32);
    });
    const auto* base = reinterpret_cast<const std::byte*>((static_cast<std::uintptr_t>(ws) + 1) << 32);
    std::set<std::pair<const std::byte*, const std::byte*>> spans;
    for (const F32Copy& c : call.copies) {
      ++copies;
      EXPECT_EQ(c.type, DType::bf16);
      EXPECT_NE(c.widen, c.round);
      const std::byte* end = c.copy + c.count * 4;
      EXPECT_GE(c.copy, base);
      EXPECT_LE(end, static_cast<const std::byte*>(call.args.workspace));
      for (auto [b, e] : spans) EXPECT_TRUE(end <= b || c.copy >= e) << "copies overlap";
      spans.insert({c.copy, end});
    }
    EXPECT_LE(static_cast<const std::byte*>(call.args.workspace), base + size);
  }
  EXPECT_GT(copies, 0);
}

// With lr = 1 and no momentum or decay one step subtracts the gradient: in
// bf16 each parameter's gradient is fp32's up to the rounding of the
// activations and gradients it is made from (2^-9 relative each, compounded
// through the layers and summed over the batch with cancellation). The
// stated tolerance: 5 % relative (L2) per parameter tensor; measured on this
// network, 0.1 % (fc) to 3.0 % (conv1, the farthest from the loss). A wrong
// gradient is off by its own size.
std::vector<double> one_step_gradients(const Network& net, Precision p, float loss_scale = 65536.0f) {
  CpuDevice device;
  Trainer trainer(device, net,
                  {.batch = 8, .memory = {.precision = p}, .seed = 5, .sgd = {.lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f}});
  trainer.set_loss_scaler({.scale = loss_scale});
  const Batch b = quadrant_batch(8, 42);
  const std::vector<float> w0 = trainer.read_parameters();
  trainer.train_step(b.images.data(), b.labels.data());
  const std::vector<float> w1 = trainer.read_parameters();
  std::vector<double> g(w0.size());
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<double>(w0[i]) - w1[i];
  return g;
}

// The relative L2 error of each trainable parameter tensor's gradient
// against fp32's, by name. read_parameters lists every parameter in node
// order, batchnorm's running statistics among them: walk the specs.
std::map<std::string, double> relative_errors(const Network& net, const std::vector<double>& exact,
                                              const std::vector<double>& got) {
  std::map<std::string, double> errors;
  std::size_t at = 0;
  const NetworkShapes shapes = net.shapes(8);
  for (std::size_t i = 0; i < net.nodes().size(); ++i)
    for (const ParamSpec& spec : net.nodes()[i].layer->params(shapes.node_inputs[i])) {
      const auto n = static_cast<std::size_t>(spec.shape.numel());
      if (spec.trainable) {
        double diff = 0, norm = 0;
        for (std::size_t k = at; k < at + n; ++k) {
          diff += (got[k] - exact[k]) * (got[k] - exact[k]);
          norm += exact[k] * exact[k];
        }
        errors[net.nodes()[i].layer->name() + "." + spec.suffix] = std::sqrt(diff / std::max(norm, 1e-30));
      }
      at += n;
    }
  EXPECT_EQ(at, exact.size());
  return errors;
}

// With lr = 1 and no momentum or decay one step subtracts the gradient: in
// 16 bits each parameter's gradient is fp32's up to the rounding of the
// activations and gradients it is made from (2^-9 relative each in bf16,
// 2^-12 in fp16, compounded through the layers and summed over the batch
// with cancellation). The stated tolerance: 5 % relative (L2) per parameter
// tensor; measured on this network in bf16, 0.1 % (fc) to 3.0 % (conv1,
// the farthest from the loss). A wrong gradient is off by its own size.
TEST_P(SixteenBit, GradientsFollowFp32LayerByLayer) {
  const Network net = testing::residual_net(true, false);
  const std::vector<double> exact = one_step_gradients(net, Precision::fp32);
  const std::vector<double> bf16 = one_step_gradients(net, GetParam());
  ASSERT_EQ(exact.size(), bf16.size());
  double least = 1, most = 0;
  for (const auto& [name, error] : relative_errors(net, exact, bf16)) {
    EXPECT_LT(error, 0.05) << name;
    least = std::min(least, error);
    most = std::max(most, error);
  }
  // The figures the README quotes (f32 copies, or the table's own bf16 kernels).
  std::printf("%s gradients against fp32, relative L2 per parameter tensor: %.2f %% to %.2f %% (%s)\n",
              to_string(GetParam()), 100 * least, 100 * most,
              CpuKernels().takes_16bit(DType::bf16) && GetParam() == Precision::bf16 ? "bf16 kernels" : "f32 copies");
}

// What the scale is for. This small network's activation gradients (1e-3
// and up) fit f16 unscaled; a deep network's do not. At scale 2^-12 this
// one's fall where a deep network's lie, below f16's normal range (6e-5),
// where it keeps few bits or flushes them to zero: its parameter gradients
// then stray far from fp32's, while at the default 2^16 they keep fp16's
// precision. (Unscaling divides exactly by a power of two: the scale alone
// decides which gradients survive.)
TEST(Precision, Fp16LossScalingKeepsTheGradientsThatWouldUnderflow) {
  const Network net = testing::residual_net(true, false);
  const std::vector<double> exact = one_step_gradients(net, Precision::fp32);
  const auto scaled = relative_errors(net, exact, one_step_gradients(net, Precision::fp16));
  const auto unscaled = relative_errors(net, exact, one_step_gradients(net, Precision::fp16, 0x1p-12f));
  double sum_scaled = 0, sum_unscaled = 0;
  for (const auto& [name, error] : scaled) {
    sum_scaled += error;
    sum_unscaled += unscaled.at(name);
  }
  EXPECT_LT(sum_scaled * 4, sum_unscaled) << "at 2^16 " << sum_scaled << ", at 2^-12 " << sum_unscaled;
}

// A scale so large that d loss / d logits overflows f16: each step is
// skipped (the parameters and momenta keep their bits) and halves the
// scale, until a step fits and trains. (Batch norm's running statistics
// are forward's and move in a skipped step too, as in PyTorch: the network
// has none, so that the whole state must keep its bits.)
TEST(Precision, Fp16SkipsOverflowingStepsAndHalvesItsScale) {
  const Network net = testing::residual_net(false, true);
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .memory = {.precision = Precision::fp16}, .seed = 3});
  trainer.set_loss_scaler({.scale = 0x1p40f});
  std::vector<float> state = trainer.read_state();
  int skipped = 0;
  for (unsigned i = 0; i < 40; ++i) {
    const float scale = trainer.loss_scaler().scale();
    const Batch b = quadrant_batch(8, 60 + i);
    const IterationResult r = trainer.train_step(b.images.data(), b.labels.data());
    EXPECT_TRUE(std::isfinite(r.loss)) << "the forward pass does not see the scale";
    const std::vector<float> after = trainer.read_state();
    if (!r.skipped) {
      EXPECT_NE(after, state) << "a step that fits trains";
      EXPECT_EQ(trainer.loss_scaler().scale(), scale);
      break;
    }
    ++skipped;
    EXPECT_EQ(after, state) << "skipped step " << i << " changed the parameters or momenta";
    EXPECT_EQ(trainer.loss_scaler().scale(), scale / 2);
  }
  EXPECT_GE(skipped, 10) << "2^40 times the logits' gradient overflows f16 (65504)";
  EXPECT_LT(skipped, 40) << "the scale came down to one that fits";
  EXPECT_EQ(trainer.loss_scaler().state().skipped_steps, skipped);
}
}  // namespace
}  // namespace tidepool
