// Offloading to the host and back: the schedules are sound, the numbers
// never change, memory goes down, and transfers overlap compute.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/memory/allocator.h"
#include "engine/core/bytes_text.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/pool_search.h"
#include "engine/plan/memory_plan.h"
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
  const Batch b = random_batch(8, 1);
  EXPECT_NO_THROW(t.train_step(b.images.data(), b.labels.data()));
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


// Settings switched between iterations: the numbers stay those of an
// uninterrupted base run, and an impossible budget is refused without
// disturbing training.
TEST(Replan, SwitchingSettingsBetweenIterationsKeepsTheNumbers) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 6}, 4).checksum;
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .seed = 6, .room_to_grow = true});
  auto step = [&](int i) {
    const Batch b = random_batch(8, 50 + i);
    trainer.train_step(b.images.data(), b.labels.data());
  };
  step(0);
  trainer.apply({.mode = OffloadMode::all, .transfer = TransferMode::sync});
  step(1);
  const std::size_t minimum = trainer.memory().minimum_pool_bytes;
  EXPECT_THROW(trainer.apply({.mode = OffloadMode::all, .budget_bytes = minimum / 2}), MemoryRefusal);
  EXPECT_THROW(trainer.apply({.heuristic = "no-such-heuristic"}), std::invalid_argument);
  EXPECT_EQ(trainer.memory().settings.mode, OffloadMode::all) << "a refused change changes nothing";
  MemorySettings conv{.mode = OffloadMode::conv, .order = AllocOrder::derivative_first, .heuristic = allocator_names().back()};
  const std::size_t arena = trainer.memory().arena_bytes;
  CpuKernels k;
  conv.budget_bytes = (plan_memory(net, 8, conv, k).minimum_pool_bytes + arena) / 2;
  const std::size_t budget = conv.budget_bytes;
  trainer.apply(conv);
  EXPECT_EQ(trainer.memory().pool_bytes, budget);
  step(2);
  EXPECT_THROW(trainer.apply({.budget_bytes = arena + 4096}), MemoryRefusal) << "beyond the reserved arena";
  step(3);
  EXPECT_EQ(trainer.param_checksum(), base);
}

}  // namespace
}  // namespace tidepool

#include "engine/run/dyn_mode.h"

namespace tidepool {
namespace {

TEST(Dyn, KeepsEverythingWhenBaseFitsAndProfilesOtherwise) {
  const Network net = testing::residual_net();
  const Batch b = random_batch(8, 9);
  {
    CpuDevice device;
    Trainer trainer(device, net, {.batch = 8, .seed = 5});
    const DynChoice c = choose_dyn(trainer, b.images.data(), b.labels.data());
    EXPECT_EQ(c.mode, OffloadMode::base) << "no budget: base fits and transfers nothing";
    for (const auto& p : c.profiles) EXPECT_EQ(p.seconds, 0.0) << "no profiling was needed";
  }
  // A budget between all's minimum and base's: base is refused, the rest are timed.
  CpuKernels k;
  const std::size_t base_min = search_pool_size(plan_schedule(net, 8, {}, k), "best-fit").pool_bytes;
  const std::size_t all_min =
      search_pool_size(plan_schedule(net, 8, {.memory = {.mode = OffloadMode::all}}, k), "best-fit").pool_bytes;
  ASSERT_LT(all_min, base_min);
  CpuDevice device;
  const std::size_t budget = (all_min + base_min) / 2 / kAllocGranularity * kAllocGranularity;
  Trainer trainer(device, net, {.batch = 8, .memory = {.mode = OffloadMode::all, .budget_bytes = budget}, .seed = 5});
  const std::uint64_t before = trainer.param_checksum();
  const DynChoice c = choose_dyn(trainer, b.images.data(), b.labels.data());
  EXPECT_NE(c.mode, OffloadMode::base);
  EXPECT_EQ(trainer.memory().settings.mode, c.mode);
  EXPECT_FALSE(c.profiles.front().fits) << "base needs more than the budget";
  int fitting = 0;
  for (const auto& p : c.profiles) fitting += p.fits;
  for (const auto& p : c.profiles)
    if (p.fits && fitting > 1) EXPECT_GT(p.seconds, 0.0) << to_string(p.mode) << " was not timed";
  EXPECT_EQ(trainer.param_checksum(), before) << "profiling leaves the parameters as they were";
  EXPECT_EQ(trainer.iteration(), 0);
  // And training from here gives base's numbers.
  for (int i = 0; i < 3; ++i) {
    const Batch s = random_batch(8, 50 + i);
    trainer.train_step(s.images.data(), s.labels.data());
  }
  EXPECT_EQ(trainer.param_checksum(), train_on_cpu(net, {.batch = 8, .seed = 5}, 3).checksum);
}

}  // namespace
}  // namespace tidepool

#include "engine/run/executor.h"

namespace tidepool {
namespace {

// Stopping a schedule at the end of the forward pass shows where every
// tensor lives: offloaded ones on the host, kept ones on the device.
TEST(Residency, ForwardPassLeavesOffloadedTensorsOnTheHost) {
  const Network net = testing::residual_net();
  CpuKernels k;
  for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
    Schedule s = plan_schedule(net, 4, {.memory = {.mode = OffloadMode::all, .transfer = transfer}}, k);
    // The end of forward: the last forward step and the frees and offloads
    // that follow it, before backward starts bringing tensors back.
    auto end = std::find_if(s.steps.rbegin(), s.steps.rend(),
                            [](const Step& st) { return st.kind == StepKind::forward; }).base();
    while (end != s.steps.end() && (end->kind == StepKind::free || end->kind == StepKind::offload ||
                                    end->kind == StepKind::wait_offload))
      ++end;
    s.steps.erase(end, s.steps.end());

    CpuDevice device;
    std::byte* arena = device.reserve_arena(8 << 20);
    std::byte* pinned = device.reserve_pinned(8 << 20);
    Executor executor(device, net, arena, {pinned, std::size_t{8} << 20}, nullptr);
    executor.use_pool("best-fit", 8 << 20, s);
    const Batch b = random_batch(4, 1);
    executor.run(s, {.images = b.images.data(), .labels = b.labels.data()});
    const Placement& p = executor.placement();
    int on_host = 0;
    for (int t = 0; t < static_cast<int>(s.tensors.size()); ++t) {
      const PlannedTensor& pt = s.tensors[t];
      if (pt.offloaded) {
        EXPECT_EQ(p.residency[t], Residency::host) << pt.info.name;
        EXPECT_FALSE(p.placed[t]) << pt.info.name << " still holds device memory";
        ++on_host;
      } else if (p.placed[t]) {
        EXPECT_EQ(p.residency[t], Residency::device) << pt.info.name;
      }
    }
    EXPECT_GT(on_host, 5);
  }
}

}  // namespace
}  // namespace tidepool

namespace tidepool {
namespace {

// vDNN++'s async release: with room in the pool, offloaded blocks are
// parked and forward never reuses a block whose copy to the host may still
// run, so the compute stream never waits for an offload there; with sync
// transfers every layer waits for its copies. Over a link this slow the
// copies are still running.
TEST(Offload, AsyncForwardWaitsForNoCopyWhenThePoolHasRoom) {
  const Network net = testing::residual_net();
  auto forward_waits = [&](TransferMode transfer, bool roomy) {
    CpuDevice device({/*link_gbps=*/0.05});
    Recorder rec;
    TrainerOptions o{.batch = 16, .memory = {.mode = OffloadMode::all, .transfer = transfer}};
    if (roomy) {
      CpuKernels k;
      o.memory.budget_bytes = search_pool_size(plan_schedule(net, 16, {}, k), "best-fit").pool_bytes;  // base's pool: room for everything
    }
    Trainer trainer(device, net, o, &rec);
    EXPECT_EQ(trainer.memory().park_horizon() > 0, transfer == TransferMode::async);
    const Batch b = random_batch(16, 3);
    trainer.train_step(b.images.data(), b.labels.data());
    const auto& steps = trainer.train_schedule().steps;
    // Up to the last forward layer (the prefetches for backward come after).
    const auto forward_end = std::find_if(steps.rbegin(), steps.rend(),
                                          [](const Step& s) { return s.kind == StepKind::forward; }).base() -
                             steps.begin();
    int waits = 0;
    for (const SpanEvent& e : rec.spans)
      if (e.kind == SpanKind::wait && e.stream == Stream::compute && e.step < forward_end &&
          e.tensor != "data" && e.tensor != "labels") {
        ++waits;
      }
    return waits;
  };
  EXPECT_EQ(forward_waits(TransferMode::async, /*roomy=*/true), 0);
  EXPECT_GT(forward_waits(TransferMode::sync, /*roomy=*/true), 5);
}

// A tensor whose block is still parked when backward wants it back takes
// the block back with its bytes: no copy from the host, no wait. In a pool
// with room for every block nothing needs to come back over the link.
TEST(Offload, ParkedTensorsComeBackWithoutACopy) {
  const Network net = testing::residual_net();
  CpuKernels k;
  auto prefetches = [&](TransferMode transfer) {
    CpuDevice device;
    Recorder rec;
    TrainerOptions o{.batch = 8, .memory = {.mode = OffloadMode::all, .transfer = transfer, .budget_bytes = 2 * search_pool_size(plan_schedule(net, 8, {}, k), "best-fit").pool_bytes}, .seed = 4};
    Trainer trainer(device, net, o, &rec);
    const Batch b = random_batch(8, 3);
    trainer.train_step(b.images.data(), b.labels.data());
    int copies = 0, offloads = 0;
    for (const SpanEvent& e : rec.spans) {
      offloads += e.kind == SpanKind::offload;
      copies += e.kind == SpanKind::prefetch && e.tensor != "data" && e.tensor != "labels";
    }
    EXPECT_GT(offloads, 5) << "offloads still go out: the plan cannot know which blocks stay parked";
    return copies;
  };
  EXPECT_EQ(prefetches(TransferMode::async), 0);
  EXPECT_GT(prefetches(TransferMode::sync), 5);
}

// The planner marks only what async offloads leave behind as parkable;
// whether it parks is the trainer's to decide.
TEST(Offload, OnlyAsyncFreesOfOffloadedTensorsAreParked) {
  const Network net = testing::residual_net();
  for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
    CpuKernels k;
    const Schedule s = plan_schedule(net, 8, {.memory = {.mode = OffloadMode::all, .transfer = transfer}}, k);
    int parked = 0;
    for (const Step& st : s.steps)
      if (st.kind == StepKind::free && st.after_copy) {
        EXPECT_TRUE(s.tensors[st.tensor].offloaded) << s.tensors[st.tensor].info.name;
        ++parked;
      }
    if (transfer == TransferMode::sync)
      EXPECT_EQ(parked, 0);
    else
      EXPECT_GT(parked, 5);
  }
}

// Parking is decided per pool: the more room, the more blocks stay parked
// (every one, until needed, in a pool with room for everything); where the
// pool could park more, the trainer names a pool that does. Whatever is
// parked, the numbers are base's.
TEST(Offload, ParkingIsDecidedByThePoolAndNeverChangesTheNumbers) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 4}, 2).checksum;
  CpuKernels k;
  const std::size_t roomy = 2 * search_pool_size(plan_schedule(net, 8, {}, k), "best-fit").pool_bytes;
  std::set<int> horizons;
  for (const std::string& heuristic : allocator_names())
    for (std::size_t budget : {std::size_t{0}, roomy}) {
      SCOPED_TRACE(heuristic + " budget " + std::to_string(budget));
      TrainerOptions o{.batch = 8, .memory = {.mode = OffloadMode::all, .heuristic = heuristic, .budget_bytes = budget}, .seed = 4};
      CpuDevice device;
      Trainer trainer(device, net, o);
      horizons.insert(trainer.memory().park_horizon());
      if (budget == roomy) EXPECT_EQ(trainer.memory().park_horizon(), kParkUntilNeeded);
      if (trainer.memory().park_horizon() == kParkUntilNeeded) EXPECT_EQ(trainer.memory().parking_pool_bytes, 0u);
      if (trainer.memory().parking_pool_bytes != 0) {
        EXPECT_GT(trainer.memory().parking_pool_bytes, trainer.memory().pool_bytes);
        TrainerOptions more = o;
        more.memory.budget_bytes = trainer.memory().parking_pool_bytes;
        CpuDevice other;
        EXPECT_GT(Trainer(other, net, more).memory().park_horizon(), trainer.memory().park_horizon())
            << "the named pool parks more";
      }
      EXPECT_EQ(train_on_cpu(net, o, 2).checksum, base);
    }
  EXPECT_GT(horizons.size(), 1u) << "the least pools park less than a roomy one";
}

}  // namespace
}  // namespace tidepool

namespace tidepool {
namespace {

// Compressed offloads (vDNN++ §III-C): the numbers stay base's, pinned
// memory shrinks to the two staging slots, the host work runs on the
// transfer streams, and ReLU outputs take less room on the host.
TEST(Compression, CompressedOffloadsGiveBaseParametersInEveryModeAndTransfer) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 4}, 3).checksum;
  for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv, OffloadMode::aconv})
    for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
      TrainerOptions o{.batch = 8, .memory = {.mode = mode, .transfer = transfer, .compress = true}, .seed = 4};
      EXPECT_EQ(train_on_cpu(net, o, 3).checksum, base) << to_string(mode) << " " << to_string(transfer);
    }
  TrainerOptions slow{.batch = 8, .memory = {.mode = OffloadMode::all, .compress = true}, .seed = 4};
  EXPECT_EQ(train_on_cpu(net, slow, 3, /*link_gbps=*/0.05).checksum, base) << "throttled copies";
  TrainerOptions threads{.batch = 8, .memory = {.mode = OffloadMode::all, .compress = true}, .seed = 4, .compress_threads = 3};
  EXPECT_EQ(train_on_cpu(net, threads, 3).checksum, base) << "three threads per tensor";
}

TEST(Compression, PinnedMemoryIsTwoStagingSlotsOfTheLargestOffloadedTensor) {
  const Network net = testing::residual_net();
  CpuKernels k;
  const Schedule plain = plan_schedule(net, 16, {.memory = {.mode = OffloadMode::all}}, k);
  const Schedule compressed = plan_schedule(net, 16, {.memory = {.mode = OffloadMode::all, .compress = true}}, k);
  std::size_t largest = 0;
  for (const PlannedTensor& t : compressed.tensors)
    if (t.offloaded) largest = std::max(largest, round_up(t.info.bytes()));
  EXPECT_EQ(compressed.staging_bytes, largest);
  EXPECT_EQ(compressed.pinned_bytes, 2 * largest);
  EXPECT_LT(compressed.pinned_bytes, plain.pinned_bytes);
  EXPECT_EQ(plan_schedule(net, 16, {.memory = {.compress = true}}, k).pinned_bytes, 0u) << "base offloads nothing";

  CpuDevice device;
  Trainer trainer(device, net, {.batch = 16, .memory = {.mode = OffloadMode::conv, .compress = true}});
  EXPECT_EQ(trainer.memory().offload_pinned_bytes, compressed.pinned_bytes) << "reserved for the worst mode, all";
}

TEST(Compression, HostWorkRunsOnTheTransferStreamsAndShrinksReluOutputs) {
  const Network net = testing::residual_net();
  CpuDevice device;
  Recorder rec;
  Trainer trainer(device, net, {.batch = 16, .memory = {.mode = OffloadMode::conv, .compress = true}}, &rec);
  const Batch b = random_batch(16, 3);
  const IterationResult r = trainer.train_step(b.images.data(), b.labels.data());

  std::map<std::string, SpanEvent> offloads, compressions, decompressions, prefetches;
  for (const SpanEvent& e : rec.spans) {
    if (e.kind == SpanKind::offload) offloads[e.tensor] = e;
    if (e.kind == SpanKind::compress) compressions[e.tensor] = e;
    if (e.kind == SpanKind::decompress) decompressions[e.tensor] = e;
    if (e.kind == SpanKind::prefetch) prefetches[e.tensor] = e;
  }
  ASSERT_FALSE(offloads.empty());
  EXPECT_EQ(compressions.size(), offloads.size());
  std::size_t from = 0, to = 0;
  for (const auto& [tensor, off] : offloads) {
    const SpanEvent& c = compressions.at(tensor);
    EXPECT_EQ(c.stream, Stream::offload);
    EXPECT_GE(c.start_us, off.end_us) << tensor << " is compressed once its copy has landed";
    EXPECT_GT(c.bytes, 0u);
    from += off.bytes;
    to += c.bytes;
    // Backward brings it back: decompressed into the staging slot, then
    // copied (unless its block was still parked: nothing to bring back).
    if (!prefetches.count(tensor)) continue;
    const SpanEvent& d = decompressions.at(tensor);
    EXPECT_EQ(d.stream, Stream::prefetch);
    EXPECT_EQ(d.bytes, c.bytes);
    EXPECT_LE(d.end_us, prefetches.at(tensor).start_us) << tensor;
    EXPECT_GE(d.start_us, c.end_us) << tensor << " is read once it is stored";
  }
  EXPECT_FALSE(decompressions.empty());
  EXPECT_EQ(r.compressed_from_bytes, from);
  EXPECT_EQ(r.compressed_to_bytes, to);
  // conv offloads the inputs of conv2 and conv3, ReLU outputs: about half
  // of their values are zero.
  EXPECT_LT(to, from * 3 / 4);
  EXPECT_GE(r.compressed_held_bytes, to);
}

TEST(Compression, ARunStartedCompressedRefusesToOffloadUncompressedAndTrainsOn) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 6}, 3).checksum;
  CpuDevice device;
  Trainer trainer(device, net,
                  {.batch = 8, .memory = {.mode = OffloadMode::all, .compress = true}, .seed = 6, .room_to_grow = true});
  auto step = [&](int i) {
    const Batch b = random_batch(8, 50 + i);
    trainer.train_step(b.images.data(), b.labels.data());
  };
  step(0);
  try {
    trainer.apply({.mode = OffloadMode::all});
    ADD_FAILURE() << "turning compression off needs pinned memory the run did not reserve";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("start a new run"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(trainer.memory().settings.compress);
  step(1);
  trainer.apply({});  // base offloads nothing: fine
  step(2);
  EXPECT_EQ(trainer.param_checksum(), base);

  // The other way round always fits: compression needs less.
  CpuDevice other;
  Trainer plain(other, net, {.batch = 8, .memory = {.mode = OffloadMode::all}, .seed = 6});
  EXPECT_NO_THROW(plain.apply({.mode = OffloadMode::all, .compress = true}));
}

}  // namespace
}  // namespace tidepool
