// Compressed offloads (vDNN++ §III-C): the numbers stay base's, pinned
// memory shrinks to the two staging slots, the host work runs on the
// transfer streams, and ReLU outputs take less room on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/allocator.h"
#include "engine/plan/planner.h"
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
using testing::train_on_cpu;

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
  EXPECT_EQ(trainer.memory().offload_host_bytes, compressed.pinned_bytes) << "reserved for the worst mode, all";
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
  plain.apply({.mode = OffloadMode::all, .compress = true});
  EXPECT_TRUE(plain.memory().settings.compress);
  const Batch b = random_batch(8, 1);
  const IterationResult r = plain.train_step(b.images.data(), b.labels.data());
  EXPECT_GT(r.compressed_from_bytes, 0u) << "the next iteration compresses its offloads";
}

}  // namespace
}  // namespace tidepool
