// Offloading to the host and back: the schedules are sound, the numbers
// never change, memory goes down, and transfers overlap compute. (The
// blocks async offloads leave behind: offload_parking_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/bytes_text.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/allocator.h"
#include "engine/plan/planner.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;
using testing::Recorder;
using testing::train_on_cpu;

TEST(Offload, EveryModeOrderTransferAndHeuristicGivesBaseParameters) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 4}, 3).checksum;
  for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv, OffloadMode::aconv})
    for (AllocOrder order : {AllocOrder::prefetch_first, AllocOrder::derivative_first})
      for (TransferMode transfer : {TransferMode::sync, TransferMode::async})
        for (const std::string& heuristic : allocator_names()) {
          TrainerOptions o{.batch = 8, .memory = {.mode = mode, .order = order, .transfer = transfer, .heuristic = heuristic}, .seed = 4};
          EXPECT_EQ(train_on_cpu(net, o, 3).checksum, base)
              << to_string(mode) << " " << to_string(order) << " " << to_string(transfer) << " " << heuristic;
        }
}

TEST(Offload, ThrottledAsyncTransfersStillGiveBaseParameters) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 4}, 2).checksum;
  TrainerOptions o{.batch = 8, .memory = {.mode = OffloadMode::all, .transfer = TransferMode::async}, .seed = 4};
  EXPECT_EQ(train_on_cpu(net, o, 2, /*link_gbps=*/0.05).checksum, base);
}

TEST(Offload, PrefetchedTensorsAreWaitedForBeforeBackwardReadsThem) {
  CpuKernels k;
  const Network net = testing::residual_net();
  for (AllocOrder order : {AllocOrder::prefetch_first, AllocOrder::derivative_first})
    for (int lookahead : {0, 1, 3}) {
      const Schedule s = plan_schedule(net, 4, {.memory = {.mode = OffloadMode::all, .order = order, .lookahead = lookahead}}, k);
      std::vector<int> state(s.tensors.size(), 0);  // 0 on device, 1 offloaded, 2 prefetching, 3 back
      int offloads = 0;
      for (const Step& st : s.steps) {
        if (st.kind == StepKind::offload) ++offloads, state[st.tensor] = 1;
        if (st.kind == StepKind::prefetch && state[st.tensor] == 1) state[st.tensor] = 2;
        if (st.kind == StepKind::wait_prefetch && state[st.tensor] == 2) state[st.tensor] = 3;
        if (st.kind != StepKind::backward) continue;
        const NodeTensors& nt = s.nodes[st.node];
        const Layer& layer = *net.nodes()[st.node].layer;
        for (std::size_t j = 0; j < nt.inputs.size(); ++j)
          if (layer.backward_reads_input(static_cast<int>(j)))
            EXPECT_NE(state[nt.inputs[j]], 1) << s.tensors[nt.inputs[j]].info.name << " is still on the host";
      }
      EXPECT_GT(offloads, 5);
      for (int t = 0; t < static_cast<int>(state.size()); ++t)
        EXPECT_TRUE(state[t] == 0 || state[t] == 3) << s.tensors[t].info.name << " never came back";
    }
}

TEST(Offload, OffloadingLowersPeakLoadAndNeedsPinnedMemory) {
  CpuKernels k;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const Schedule base = plan_schedule(net, 32, {}, k);
  const Schedule all = plan_schedule(net, 32, {.memory = {.mode = OffloadMode::all}}, k);
  const Schedule conv = plan_schedule(net, 32, {.memory = {.mode = OffloadMode::conv}}, k);
  EXPECT_EQ(base.pinned_bytes, 0u);
  EXPECT_GT(all.pinned_bytes, conv.pinned_bytes);
  EXPECT_LT(all.peak_load_bytes, base.peak_load_bytes);
  EXPECT_LE(conv.peak_load_bytes, base.peak_load_bytes);
}

TEST(Offload, BudgetBelowTheMinimumNamesTheMinimumAndTheMinimumWorks) {
  const Network net = testing::residual_net();
  CpuDevice probe;
  TrainerOptions o{.batch = 8, .memory = {.mode = OffloadMode::all}, .seed = 2};
  std::size_t minimum = 0;
  {
    Trainer t(probe, net, o);
    minimum = t.memory().minimum_pool_bytes;
  }
  CpuDevice device;
  o.memory.budget_bytes = minimum - 4096;
  try {
    Trainer t(device, net, o);
    FAIL() << "a budget below the minimum was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find(format_bytes(minimum)),
              std::string::npos)
        << e.what();
  }
  CpuDevice device2;
  o.memory.budget_bytes = minimum;
  Trainer t(device2, net, o);
  EXPECT_EQ(t.memory().pool_bytes, minimum) << "the run's pool is its budget";
  const Batch b = random_batch(8, 1);
  t.train_step(b.images.data(), b.labels.data());
  // At the minimum budget it trains base's numbers.
  CpuDevice device3;
  TrainerOptions base_options = o;
  base_options.memory = {};
  Trainer base(device3, net, base_options);
  base.train_step(b.images.data(), b.labels.data());
  EXPECT_EQ(t.param_checksum(), base.param_checksum());
}

// With a slow link, async offloads run while the compute stream goes on;
// sync makes the compute stream wait at the end of each layer.
TEST(Offload, AsyncTransfersOverlapComputeAndSyncOnesStall) {
  const Network net = testing::residual_net();
  auto spans_of = [&](TransferMode transfer) {
    CpuDevice device({/*link_gbps=*/0.02});
    Recorder rec;
    Trainer trainer(device, net, {.batch = 16, .memory = {.mode = OffloadMode::all, .transfer = transfer}}, &rec);
    const Batch b = random_batch(16, 3);
    trainer.train_step(b.images.data(), b.labels.data());
    return rec.spans;
  };
  // Async: offloads run while later forward layers compute.
  const auto async = spans_of(TransferMode::async);
  double overlap = 0;
  for (const SpanEvent& t : async)
    if (t.kind == SpanKind::offload)
      for (const SpanEvent& c : async)
        if (c.kind == SpanKind::forward)
          overlap += std::max(0.0, std::min(t.end_us, c.end_us) - std::max(t.start_us, c.start_us));
  EXPECT_GT(overlap, 0.0) << "offloads ran while forward layers computed";
  // Sync: the layer during which an offload starts ends with it, so no
  // offload is still running when the layer after that one starts.
  const auto sync = spans_of(TransferMode::sync);
  std::vector<double> forward_starts;
  for (const SpanEvent& c : sync)
    if (c.kind == SpanKind::forward) forward_starts.push_back(c.start_us);
  std::sort(forward_starts.begin(), forward_starts.end());
  int offloads = 0;
  for (const SpanEvent& t : sync) {
    if (t.kind != SpanKind::offload) continue;
    ++offloads;
    auto next = std::upper_bound(forward_starts.begin(), forward_starts.end(), t.start_us);
    if (next != forward_starts.end() && ++next != forward_starts.end())
      EXPECT_LE(t.end_us, *next) << t.tensor << " outlived the layer after its own";
  }
  EXPECT_GT(offloads, 5);
}

}  // namespace
}  // namespace tidepool
