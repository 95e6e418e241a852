// Zhuang et al.'s transfer choices (§4): pinned or pageable host
// memory, stream or thread copies. The numbers never change; pageable
// offloads really pass through the staging buffers; thread copies run
// after the compute that produced their data; the figures say what is
// pinned and what is pageable; and what cannot work is refused.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_plan.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;
using testing::Recorder;
using testing::train_on;
using testing::train_on_cpu;

TEST(ZhuangTransfers, TheSameSeedGivesTheSameParametersWhateverTheHostMemoryAndCopyEngine) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 5}, 3).checksum;
  for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv})
    for (TransferMode transfer : {TransferMode::sync, TransferMode::async})
      for (HostMemory host : {HostMemory::pinned, HostMemory::pageable})
        for (CopyEngine engine : {CopyEngine::stream, CopyEngine::threads}) {
          const TrainerOptions o{
              .batch = 8,
              .memory = {.mode = mode, .transfer = transfer, .host_memory = host, .copy_engine = engine},
              .seed = 5};
          EXPECT_EQ(train_on_cpu(net, o, 3).checksum, base)
              << to_string(mode) << " " << to_string(transfer) << " " << to_string(host) << " " << to_string(engine);
        }
  const TrainerOptions slow{
      .batch = 8,
      .memory = {.mode = OffloadMode::all, .host_memory = HostMemory::pageable, .copy_engine = CopyEngine::threads},
      .seed = 5};
  EXPECT_EQ(train_on_cpu(net, slow, 3, /*link_gbps=*/0.05).checksum, base) << "throttled link";
}

TEST(ZhuangTransfers, WithinBf16TooTheParametersDoNotDependOnTheHostMemoryOrCopyEngine) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .memory = {.precision = Precision::bf16}, .seed = 5}, 3).checksum;
  for (HostMemory host : {HostMemory::pinned, HostMemory::pageable})
    for (CopyEngine engine : {CopyEngine::stream, CopyEngine::threads}) {
      const TrainerOptions o{.batch = 8,
                             .memory = {.precision = Precision::bf16,
                                        .mode = OffloadMode::all,
                                        .host_memory = host,
                                        .copy_engine = engine},
                             .seed = 5};
      EXPECT_EQ(train_on_cpu(net, o, 3).checksum, base) << to_string(host) << " " << to_string(engine);
    }
}

TEST(ZhuangTransfers, PageableOffloadsPassThroughTheStagingBuffersAndPinOnlyThem) {
  const Network net = testing::residual_net();
  for (CopyEngine engine : {CopyEngine::stream, CopyEngine::threads}) {
    SCOPED_TRACE(to_string(engine));
    CpuDevice device;
    Recorder rec;
    Trainer trainer(device, net,
                    {.batch = 16,
                     .memory = {.mode = OffloadMode::all, .host_memory = HostMemory::pageable, .copy_engine = engine}},
                    &rec);
    const MemoryPlan& plan = trainer.memory();
    ASSERT_GT(plan.offloaded_bytes(), 0u);
    // The region the offloads wait in is pageable; the pinned region holds
    // the loss read-back and nothing of theirs.
    EXPECT_EQ(device.pageable_bytes(), plan.offload_host_bytes);
    EXPECT_EQ(device.pinned_bytes(), plan.readback_pinned_bytes);
    EXPECT_TRUE(plan.host_layout(0).pageable_slots);
    EXPECT_EQ(device.staged_bytes(), 0u);

    const Batch b = random_batch(16, 9);
    trainer.train_step(b.images.data(), b.labels.data());
    // Every offload and every prefetch of an offloaded tensor went through a
    // staging buffer; the batch's upload (from the trainer's pinned
    // staging) did not.
    std::size_t offloaded = 0, prefetched = 0;
    std::set<std::string> away;
    for (const SpanEvent& e : rec.spans) {  // in step order
      if (e.iteration < 0) continue;
      if (e.kind == SpanKind::offload) {
        offloaded += e.bytes;
        away.insert(e.tensor);
      }
      if (e.kind == SpanKind::prefetch && away.count(e.tensor)) prefetched += e.bytes;
    }
    EXPECT_EQ(offloaded, plan.offloaded_bytes());
    EXPECT_EQ(device.staged_bytes(), offloaded + prefetched);

    const MemorySummary m = plan.summary();
    EXPECT_EQ(m.pinned_bytes, kPageableStagingBuffers * kPageableStagingBytes) << "pinned: just the staging";
    EXPECT_EQ(m.pageable_bytes, trainer.train_schedule().pinned_bytes) << "pageable: the offloads' slots";
  }
}

TEST(ZhuangTransfers, PinnedOffloadsAreNotStagedAndHaveNoPageableMemory) {
  const Network net = testing::residual_net();
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 16, .memory = {.mode = OffloadMode::all, .copy_engine = CopyEngine::threads}});
  const Batch b = random_batch(16, 9);
  trainer.train_step(b.images.data(), b.labels.data());
  EXPECT_EQ(device.staged_bytes(), 0u);
  EXPECT_EQ(device.pageable_bytes(), 0u);
  const MemorySummary m = trainer.memory().summary();
  EXPECT_EQ(m.pinned_bytes, trainer.train_schedule().pinned_bytes);
  EXPECT_EQ(m.pageable_bytes, 0u);
}

TEST(ZhuangTransfers, ThreadCopiesStartAfterTheComputeThatProducedTheirDataAndPrefetchesAfterTheirOffloads) {
  const Network net = testing::residual_net();
  CpuDevice device;
  Recorder rec;
  Trainer trainer(device, net,
                  {.batch = 16,
                   .memory = {.mode = OffloadMode::all, .transfer = TransferMode::async, .copy_engine = CopyEngine::threads}},
                  &rec);
  const Batch b = random_batch(16, 4);
  trainer.train_step(b.images.data(), b.labels.data());
  const Schedule& s = trainer.train_schedule();
  // The compute span that ends last before each transfer's step was issued.
  std::map<std::string, SpanEvent> offloads, prefetches;
  std::vector<SpanEvent> compute;
  for (const SpanEvent& e : rec.spans) {
    if (e.iteration < 0) continue;
    if (e.kind == SpanKind::offload) offloads[e.tensor] = e;
    if (e.kind == SpanKind::prefetch) prefetches[e.tensor] = e;
    if (e.kind == SpanKind::forward || e.kind == SpanKind::backward) compute.push_back(e);
  }
  ASSERT_FALSE(offloads.empty());
  for (const auto& [tensor, off] : offloads) {
    EXPECT_EQ(off.stream, Stream::offload) << tensor;
    for (const SpanEvent& c : compute)
      if (c.step < off.step) EXPECT_GE(off.start_us, c.end_us) << tensor << " after " << c.layer;
    const auto back = prefetches.find(tensor);
    if (back == prefetches.end()) continue;  // still parked: came back without a copy
    EXPECT_EQ(back->second.stream, Stream::prefetch);
    EXPECT_GE(back->second.start_us, off.end_us) << tensor;
  }
  // The layer after each prefetch's wait step starts once the copy is done.
  for (const auto& [tensor, pre] : prefetches) {
    int waited = -1;
    for (int i = pre.step; i < static_cast<int>(s.steps.size()) && waited < 0; ++i)
      if (s.steps[i].kind == StepKind::wait_prefetch && s.tensors[s.steps[i].tensor].info.name == tensor) waited = i;
    ASSERT_GE(waited, 0) << tensor;
    for (const SpanEvent& c : compute)
      if (c.step > waited) {
        EXPECT_GE(c.start_us, pre.end_us) << c.layer << " after the prefetch of " << tensor;
        break;
      }
  }
  EXPECT_GT(s.offloaded_bytes(), 0u);
}

TEST(ZhuangTransfers, ARunKeepsItsHostMemoryButChangesItsCopyEngine) {
  const Network net = testing::residual_net();
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .memory = {.mode = OffloadMode::all}, .seed = 2});
  MemorySettings pageable = trainer.memory().settings;
  pageable.host_memory = HostMemory::pageable;
  try {
    trainer.apply(pageable);
    FAIL() << "a pinned run cannot turn pageable";
  } catch (const MemoryRefusal& e) {
    EXPECT_NE(std::string(e.what()).find("start a new run with --host-memory pageable"), std::string::npos) << e.what();
  }
  MemorySettings threads = trainer.memory().settings;
  threads.copy_engine = CopyEngine::threads;
  trainer.apply(threads);
  EXPECT_EQ(trainer.memory().settings.copy_engine, CopyEngine::threads);
  EXPECT_EQ(trainer.memory().settings.host_memory, HostMemory::pinned) << "kept";
  const Batch b = random_batch(8, 1);
  trainer.train_step(b.images.data(), b.labels.data());
  // Who copies never changes the numbers: the bits of a run that kept stream copies.
  CpuDevice other;
  Trainer streams(other, net, {.batch = 8, .memory = {.mode = OffloadMode::all}, .seed = 2});
  streams.train_step(b.images.data(), b.labels.data());
  EXPECT_EQ(trainer.param_checksum(), streams.param_checksum());
}

TEST(ZhuangTransfers, CompressionRefusesPageableMemoryAndThreadCopies) {
  const Network net = testing::residual_net();
  CpuKernels k;
  EXPECT_THROW(plan_memory(net, 8, {.mode = OffloadMode::all, .compress = true, .host_memory = HostMemory::pageable}, k),
               std::invalid_argument);
  EXPECT_THROW(plan_memory(net, 8, {.mode = OffloadMode::all, .compress = true, .copy_engine = CopyEngine::threads}, k),
               std::invalid_argument);
}

TEST(ZhuangTransfers, TheSimDeviceAddsTheStagingMemcpyToPageableCopiesAndRefusesCopyThreads) {
  SimDevice device{PerfModel(*specification_profile("m40"))};
  std::byte* arena = device.reserve_arena(64 << 20);
  std::byte* pinned = device.reserve_pinned(16 << 20);
  std::byte* pageable = device.reserve_pageable(16 << 20);
  const std::size_t bytes = 7'000'000;  // 1 ms at kPageableMemcpyGbps
  auto a = device.record(Stream::offload);
  device.copy_async(Stream::offload, pinned, arena, bytes);
  auto b = device.record(Stream::offload);
  device.copy_async(Stream::offload, pageable, arena, bytes);
  auto c = device.record(Stream::offload);
  EXPECT_DOUBLE_EQ(device.elapsed_us(*a, *b), device.model().copy_us(bytes, true));
  EXPECT_DOUBLE_EQ(device.elapsed_us(*b, *c), device.model().copy_us(bytes, true) + 1000.0);
  EXPECT_DOUBLE_EQ(device.model().copy_us(bytes, false, true), device.model().copy_us(bytes, false) + 1000.0);
  EXPECT_FALSE(device.caps().host_copies);
  EXPECT_THROW(device.copy_sync(pinned, arena, 16), DeviceError);
}

// The executor really hands a thread-copy run's transfers to host threads:
// on a device whose streams are virtual clocks (sim) the first offload is
// refused there, naming the engine that works, rather than quietly copied
// on the device's streams. (The session refuses such settings before a
// trainer exists; this is the executor's own check.)
TEST(ZhuangTransfers, AThreadCopyRunHandsItsTransfersToHostThreads) {
  const Network net = testing::residual_net();
  SimDevice device{PerfModel(*specification_profile("m40"))};
  Trainer trainer(device, net, {.batch = 8, .memory = {.mode = OffloadMode::all, .copy_engine = CopyEngine::threads}});
  const Batch b = random_batch(8, 1);
  try {
    trainer.train_step(b.images.data(), b.labels.data());
    ADD_FAILURE() << "the transfers went somewhere other than the copy threads";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("use --copy-engine stream"), std::string::npos) << e.what();
  }
}

TEST(ZhuangTransfers, PageableRunsOnTheSimDevicePredictAndTakeLonger) {
  const Network net = testing::residual_net();
  PerfModel model(*specification_profile("m40"));
  CpuKernels k;
  const MemoryPlan pinned = plan_memory(net, 16, {.mode = OffloadMode::all}, k, {}, &model);
  const MemoryPlan pageable =
      plan_memory(net, 16, {.mode = OffloadMode::all, .host_memory = HostMemory::pageable}, k, {}, &model);
  ASSERT_TRUE(pinned.predicted && pageable.predicted);
  EXPECT_GE(pageable.predicted->iteration_us, pinned.predicted->iteration_us);
  EXPECT_EQ(pageable.summary().pageable_bytes, pinned.summary().pinned_bytes);
}

}  // namespace
}  // namespace tidepool
