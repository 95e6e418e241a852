// Recomputation (OffloadMode::recompute, recompute_cheap): the schedules
// are sound (every tensor a kernel reads is on the device when it runs),
// the numbers never change (batch norm's running statistics move once,
// dropout draws the same mask), memory goes down, and a simulated run
// shows the recomputes on the compute stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/fusion.h"
#include "engine/layers/add.h"
#include "engine/layers/batchnorm.h"
#include "engine/layers/conv2d.h"
#include "engine/layers/flatten.h"
#include "engine/layers/linear.h"
#include "engine/layers/pooling.h"
#include "engine/layers/relu.h"
#include "engine/layers/softmax_xent.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/gpu_queries.h"
#include "engine/device/sim/sim_device.h"
#include "engine/memory/allocator.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/planner.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;

constexpr OffloadMode kRecomputeModes[] = {OffloadMode::recompute, OffloadMode::recompute_cheap};

struct Trained {
  std::vector<float> parameters;  // running statistics included (Role::weight)
  int recomputes = 0;             // recompute steps in the training schedule
};

Trained train(const Network& net, const MemorySettings& m, int iterations = 3) {
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .memory = m, .seed = 4});
  for (int i = 0; i < iterations; ++i) {
    const Batch b = random_batch(8, 50 + static_cast<unsigned>(i));
    trainer.train_step(b.images.data(), b.labels.data());
  }
  return {trainer.read_parameters(), trainer.train_schedule().recompute_steps()};
}

// Both test networks: every layer kind (dropout, max-pool, depthwise,
// unfused batch norm and ReLU), and resnet's block with its ReLUs fused
// into the batch norm and the add (the mask a fused batch norm saves).
std::vector<std::pair<std::string, Network>> networks() {
  std::vector<std::pair<std::string, Network>> out;
  out.emplace_back("residual", testing::residual_net());
  out.emplace_back("fused block", fuse(testing::basic_block_net(), Fusion::relu));
  return out;
}

TEST(Recompute, EveryModeHeuristicAndTransferGivesBaseParameters) {
  for (const auto& [label, net] : networks()) {
    const Trained base = train(net, {});
    ASSERT_EQ(base.recomputes, 0);
    for (OffloadMode mode : kRecomputeModes)
      for (TransferMode transfer : {TransferMode::sync, TransferMode::async})
        for (const std::string& heuristic : allocator_names()) {
          const Trained r = train(net, {.mode = mode, .transfer = transfer, .heuristic = heuristic});
          EXPECT_GT(r.recomputes, 0) << label << " " << to_string(mode) << ": nothing was recomputed";
          EXPECT_EQ(r.parameters, base.parameters)
              << label << " " << to_string(mode) << " " << to_string(transfer) << " " << heuristic;
        }
  }
}

TEST(Recompute, SixteenBitParametersAreBase) {
  for (Precision precision : {Precision::bf16, Precision::fp16})
    for (const auto& [label, net] : networks()) {
      const Trained base = train(net, {.precision = precision});
      for (OffloadMode mode : kRecomputeModes) {
        const Trained r = train(net, {.precision = precision, .mode = mode});
        EXPECT_GT(r.recomputes, 0);
        EXPECT_EQ(r.parameters, base.parameters) << label << " " << to_string(precision) << " " << to_string(mode);
      }
    }
}

// The running statistics are what base leaves: a second pass that moved
// them again would leave them one momentum step further.
TEST(Recompute, BatchNormRunningStatisticsMoveOncePerIteration) {
  const Network net = fuse(testing::basic_block_net(), Fusion::relu);
  const Trained base = train(net, {}, 1);
  const Trained again = train(net, {.mode = OffloadMode::recompute_cheap}, 1);
  CpuKernels k;
  const Schedule s = plan_schedule(net, 8, {.memory = {.mode = OffloadMode::recompute_cheap}}, k);
  std::vector<std::string> recomputed_batch_norms;
  for (const Step& st : s.steps)
    if (st.kind == StepKind::recompute && net.nodes()[st.node].layer->kind().starts_with("batchnorm"))
      recomputed_batch_norms.push_back(net.nodes()[st.node].layer->name());
  EXPECT_FALSE(recomputed_batch_norms.empty()) << "the test needs a batch norm run twice";
  EXPECT_EQ(again.parameters, base.parameters);
}

// Replays a schedule's residency: every tensor a forward, recompute or
// backward step reads or writes is allocated when it runs.
void expect_sound(const Network& net, const Schedule& s, const std::string& label) {
  std::vector<bool> live(s.tensors.size(), false);
  for (int t : s.persistent) live[t] = true;
  auto expect_live = [&](int t, const Step& st, const char* what) {
    if (t >= 0)
      EXPECT_TRUE(live[t]) << label << ": " << to_string(st.kind) << " of " << net.nodes()[st.node].layer->name()
                           << " " << what << " " << s.tensors[t].info.name << ", which is not on the device";
  };
  for (const Step& st : s.steps) {
    if (st.kind == StepKind::alloc) live[st.tensor] = true;
    if (st.kind == StepKind::free) live[st.tensor] = false;
    if (st.kind != StepKind::forward && st.kind != StepKind::recompute && st.kind != StepKind::backward) continue;
    const NodeTensors& nt = s.nodes[st.node];
    const Layer& layer = *net.nodes()[st.node].layer;
    if (st.kind == StepKind::backward) {
      for (std::size_t j = 0; j < nt.inputs.size(); ++j)
        if (layer.backward_reads_input(static_cast<int>(j))) expect_live(nt.inputs[j], st, "reads");
      if (layer.backward_reads_output()) expect_live(nt.output, st, "reads");
      for (int t : nt.saved) expect_live(t, st, "reads");
      expect_live(nt.backward_workspace, st, "uses");
      continue;
    }
    for (int t : nt.inputs) expect_live(t, st, "reads");
    expect_live(nt.output, st, "writes");
    for (int t : nt.saved) expect_live(t, st, "writes");
    expect_live(nt.forward_workspace, st, "uses");
    if (st.kind == StepKind::recompute) {
      EXPECT_EQ(st.tensor, nt.output);
      EXPECT_FALSE(s.tensors[nt.output].offloaded) << label << ": a recompute writes a tensor that is also offloaded";
    }
  }
}

TEST(Recompute, EveryModelsScheduleHasWhatEachKernelReadsOnTheDevice) {
  CpuKernels k;
  for (const std::string name : {"resnet20", "resnet18", "vgg11", "mobilenet", "alexnet"}) {
    const Network net = models::make_model(name, models::InputKind::cifar, 10);
    const Network fused = fuse(models::make_model(name, models::InputKind::cifar, 10), Fusion::relu);
    for (OffloadMode mode : kRecomputeModes)
      for (AllocOrder order : {AllocOrder::prefetch_first, AllocOrder::derivative_first}) {
        const PlanSettings settings{.memory = {.mode = mode, .order = order}};
        const Schedule s = plan_schedule(net, 4, settings, k);
        EXPECT_GT(s.recompute_steps(), 0) << name;
        expect_sound(net, s, name + " " + to_string(mode));
        expect_sound(fused, plan_schedule(fused, 4, settings, k), name + " fused " + to_string(mode));
      }
  }
}

// Chen et al.'s checkpoints are block outputs, so no segment's recompute
// reaches into the one before, and the peak falls well below base's.
TEST(Recompute, SqrtSegmentsRecomputeEachTensorOnceAndLowerThePeak) {
  const GpuQueries v100(specification_profile("v100")->gpu);
  const Network net = fuse(models::make_model("resnet56", models::InputKind::cifar, 10), Fusion::relu);
  const Schedule base = plan_schedule(net, 64, {}, v100);
  const Schedule chen = plan_schedule(net, 64, {.memory = {.mode = OffloadMode::recompute}}, v100);
  const Schedule cheap = plan_schedule(net, 64, {.memory = {.mode = OffloadMode::recompute_cheap}}, v100);
  int dropped = 0;
  for (const PlannedTensor& t : chen.tensors) dropped += t.recomputed;
  EXPECT_GT(dropped, 0);
  // Every layer output is recomputed at most once per iteration in Chen's
  // scheme: a segment's recompute never reaches back past its checkpoint.
  std::vector<int> times(chen.tensors.size(), 0);
  for (const Step& st : chen.steps)
    if (st.kind == StepKind::recompute) ++times[st.tensor];
  for (std::size_t t = 0; t < times.size(); ++t)
    EXPECT_LE(times[t], 1) << chen.tensors[t].info.name << " recomputed " << times[t] << " times";
  EXPECT_LT(chen.peak_load_bytes, base.peak_load_bytes * 6 / 10);
  EXPECT_LT(cheap.peak_load_bytes, base.peak_load_bytes);
  EXPECT_LT(chen.peak_load_bytes, cheap.peak_load_bytes);
  // SuperNeurons' recomputes are cheap layers only.
  for (const Step& st : cheap.steps)
    if (st.kind == StepKind::recompute) {
      const std::string_view kind = net.nodes()[st.node].layer->kind();
      EXPECT_TRUE(kind != "conv2d" && kind != "linear" && kind != "depthwise_conv") << kind;
    }
}

// A ReLU whose input's last backward reader (conv3) runs before the
// ReLU's output is needed (by conv2): that input is gone by then, so
// recomputing the ReLU would mean running conv1 again; recompute-cheap
// keeps the ReLU's output instead.
Network late_reader_net() {
  Network n("late_reader", {3, 8, 8}, 4);
  const std::string a = n.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 8, .padding = 1}), {"data"});
  const std::string s = n.add(std::make_unique<Relu>("relu"), {a});
  const std::string b = n.add(std::make_unique<Conv2d>("conv2", Conv2dOptions{.out_channels = 8, .padding = 1}), {s});
  const std::string c = n.add(std::make_unique<Conv2d>("conv3", Conv2dOptions{.out_channels = 8, .padding = 1}), {a});
  std::string x = n.add(std::make_unique<Add>("add"), {b, c});
  x = n.add(std::make_unique<Pool2d>("gap", PoolOptions{.global = true}), {x});
  x = n.add(std::make_unique<Flatten>("flatten"), {x});
  x = n.add(std::make_unique<Linear>("fc", 4), {x});
  n.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {x, "labels"});
  return n;
}

// A batch norm whose only reader is a convolution nothing downstream
// uses: its output is recomputed for no backward pass that runs, and is
// freed once, not twice.
Network dead_branch_net() {
  Network n("dead_branch", {3, 8, 8}, 4);
  const std::string a = n.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 8, .padding = 1}), {"data"});
  const std::string b = n.add(std::make_unique<BatchNorm>("bn"), {a});
  n.add(std::make_unique<Conv2d>("dead", Conv2dOptions{.out_channels = 8, .padding = 1}), {b});
  std::string x = n.add(std::make_unique<Pool2d>("gap", PoolOptions{.global = true}), {a});
  x = n.add(std::make_unique<Flatten>("flatten"), {x});
  x = n.add(std::make_unique<Linear>("fc", 4), {x});
  n.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {x, "labels"});
  return n;
}

TEST(Recompute, AnInputGoneBeforeTheRecomputeIsNotAssumedToStay) {
  CpuKernels k;
  const Network net = late_reader_net();
  const Schedule cheap = plan_schedule(net, 4, {.memory = {.mode = OffloadMode::recompute_cheap}}, k);
  expect_sound(net, cheap, "late reader, recompute-cheap");
  for (const Step& st : cheap.steps)
    if (st.kind == StepKind::recompute)
      EXPECT_NE(net.nodes()[st.node].layer->kind(), "conv2d") << "recompute-cheap ran a convolution again";
  const Schedule chen = plan_schedule(net, 4, {.memory = {.mode = OffloadMode::recompute}}, k);
  expect_sound(net, chen, "late reader, recompute");
  const Trained base = train(net, {});
  for (OffloadMode mode : kRecomputeModes) EXPECT_EQ(train(net, {.mode = mode}).parameters, base.parameters);
}

TEST(Recompute, ATensorOnlyADeadBranchReadsIsFreedOnce) {
  CpuKernels k;
  const Network net = dead_branch_net();
  for (OffloadMode mode : kRecomputeModes) {
    const Schedule s = plan_schedule(net, 4, {.memory = {.mode = mode}}, k);  // throws on a double free
    expect_sound(net, s, std::string("dead branch, ") + to_string(mode));
  }
  // The dead branch's parameters get no gradient and stay as they were
  // initialised (they were updated with an unwritten gradient buffer once,
  // and base differed from itself).
  const Trained base = train(net, {});
  EXPECT_EQ(train(net, {}).parameters, base.parameters) << "base, twice";
  for (OffloadMode mode : kRecomputeModes) EXPECT_EQ(train(net, {.mode = mode}).parameters, base.parameters);
}

TEST(Recompute, ASimulatedRunShowsRecomputeSpansOnTheComputeStream) {
  const Network net = fuse(models::make_model("resnet20", models::InputKind::cifar, 10), Fusion::relu);
  auto iteration = [&](OffloadMode mode, testing::Recorder& recorder) {
    SimDevice sim{PerfModel(*specification_profile("v100"))};
    Trainer trainer(sim, net, {.batch = 32, .memory = {.mode = mode}}, &recorder);
    const Batch b = random_batch(32, 1, {3 * 32 * 32, 10});
    trainer.train_step(b.images.data(), b.labels.data());
    return trainer.train_schedule().recompute_steps();
  };
  testing::Recorder base, cheap;
  iteration(OffloadMode::base, base);
  const int steps = iteration(OffloadMode::recompute_cheap, cheap);
  int spans = 0;
  double recompute_us = 0;
  for (const SpanEvent& e : cheap.spans)
    if (e.kind == SpanKind::recompute) {
      ++spans;
      recompute_us += e.end_us - e.start_us;
      EXPECT_EQ(e.stream, Stream::compute);
      EXPECT_FALSE(e.layer.empty());
    }
  EXPECT_EQ(spans, steps);
  EXPECT_GT(spans, 0);
  for (const SpanEvent& e : base.spans) EXPECT_NE(e.kind, SpanKind::recompute);
  ASSERT_EQ(base.iterations.size(), 1u);
  ASSERT_EQ(cheap.iterations.size(), 1u);
  EXPECT_GT(recompute_us, 0);
}

}  // namespace
}  // namespace tidepool
