// Training end to end on the cuda device: every offload mode reproduces
// `base` bit for bit (as tests/engine/run/offload_test.cpp checks for the cpu
// device), the same seed gives the same bits, the numbers stay close to the
// cpu device's, and with async transfers the offload stream really runs
// while the compute stream works.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/fusion.h"
#include "engine/memory/allocator.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/observe/sinks/ring_sink.h"
#include "engine/run/trainer.h"
#include "gpu_testing.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;
using testing::train_on;
using testing::TrainingOutcome;

TrainingOutcome train_on_gpu(const Network& net, const TrainerOptions& options, int iterations) {
  CudaDevice device;
  return train_on(device, net, options, iterations);
}

TEST(GpuTraining, EveryOffloadModeGivesBaseParametersBitForBit) {
  TIDEPOOL_REQUIRE_GPU();
  const Network net = testing::residual_net();
  for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p}) {
    const TrainerOptions base_options{.batch = 16, .memory = {.scheme = scheme}, .seed = 4};
    const std::uint64_t base = train_on_gpu(net, base_options, 3).checksum;
    for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv, OffloadMode::aconv})
      for (AllocOrder order : {AllocOrder::prefetch_first, AllocOrder::derivative_first})
        for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
          TrainerOptions o = base_options;
          o.memory.mode = mode, o.memory.order = order, o.memory.transfer = transfer;
          EXPECT_EQ(train_on_gpu(net, o, 3).checksum, base)
              << to_string(scheme) << " " << to_string(mode) << " " << to_string(order) << " "
              << to_string(transfer);
        }
    // Every heuristic places the tensors elsewhere; the numbers stay.
    for (const std::string& heuristic : allocator_names()) {
      TrainerOptions o = base_options;
      o.memory.mode = OffloadMode::all;
      o.memory.heuristic = heuristic;
      EXPECT_EQ(train_on_gpu(net, o, 3).checksum, base) << to_string(scheme) << " " << heuristic;
    }
    // Compressed offloads: host tasks on the transfer streams
    // (cudaLaunchHostFunc) between the copies and the staging slots.
    for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
      TrainerOptions o = base_options;
      o.memory.mode = OffloadMode::all, o.memory.transfer = transfer, o.memory.compress = true;
      EXPECT_EQ(train_on_gpu(net, o, 3).checksum, base) << to_string(scheme) << " compressed " << to_string(transfer);
    }
    // Zhuang's choices: pageable host memory (the driver stages its
    // copies) and copies from host threads (cudaMemcpyAsync on the compute
    // stream, waited for by the copy thread).
    for (HostMemory host : {HostMemory::pinned, HostMemory::pageable})
      for (CopyEngine engine : {CopyEngine::stream, CopyEngine::threads}) {
        TrainerOptions o = base_options;
        o.memory.mode = OffloadMode::all, o.memory.host_memory = host, o.memory.copy_engine = engine;
        EXPECT_EQ(train_on_gpu(net, o, 3).checksum, base)
            << to_string(scheme) << " " << to_string(host) << " " << to_string(engine);
      }
  }
}

TEST(GpuTraining, TheSameSeedGivesTheSameBitsAndTheCpuDevicesNumbers) {
  TIDEPOOL_REQUIRE_GPU();
  const Network net = testing::residual_net();
  const TrainerOptions options{.batch = 16, .seed = 9};
  const TrainingOutcome first = train_on_gpu(net, options, 4);
  const TrainingOutcome second = train_on_gpu(net, options, 4);
  EXPECT_EQ(first.checksum, second.checksum);
  EXPECT_EQ(first.losses, second.losses);

  CpuDevice cpu;
  const TrainingOutcome reference = train_on(cpu, net, options, 4);
  // Same initial parameters, same batches, same dropout masks: the devices
  // differ only in f32 rounding, which four SGD steps amplify little.
  ASSERT_EQ(first.losses.size(), reference.losses.size());
  for (std::size_t i = 0; i < first.losses.size(); ++i)
    EXPECT_NEAR(first.losses[i], reference.losses[i], 1e-3 * std::fabs(reference.losses[i]) + 1e-4)
        << "iteration " << i;
  EXPECT_TRUE(testing::close_to_cpu(first.parameters, reference.parameters, 1e-3, 1e-4));
}

// --fuse relu on the cuda device: the fused batch norms run our own
// kernels with their bit masks (in f32 and, under bf16, on 16-bit
// activations), the fused add ours; offloading keeps the bits, and the f32
// numbers follow the cpu device's fused network.
TEST(GpuTraining, AFusedNetworkKeepsItsBitsInEveryModeAndTheCpuDevicesNumbers) {
  TIDEPOOL_REQUIRE_GPU();
  const Network net = fuse(testing::basic_block_net(), Fusion::relu);
  ASSERT_EQ(net.nodes()[1].layer->kind(), "batchnorm_relu");
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    if (p == Precision::bf16 && !CudaDevice().kernels().takes_16bit(DType::bf16)) continue;  // refused before Ampere
    const TrainerOptions options{.batch = 16, .memory = {.precision = p}, .seed = 5};
    const TrainingOutcome base = train_on_gpu(net, options, 3);
    for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv}) {
      TrainerOptions o = options;
      o.memory.mode = mode;
      EXPECT_EQ(train_on_gpu(net, o, 3).checksum, base.checksum) << to_string(p) << " " << to_string(mode);
    }
    if (p != Precision::fp32) continue;
    CpuDevice cpu;
    const TrainingOutcome reference = train_on(cpu, net, options, 3);
    EXPECT_TRUE(testing::close_to_cpu(base.parameters, reference.parameters, 1e-3, 1e-4));
  }
}

TEST(GpuTraining, SwitchingSettingsBetweenIterationsKeepsTheNumbers) {
  TIDEPOOL_REQUIRE_GPU();
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_gpu(net, {.batch = 16, .seed = 6}, 4).checksum;
  CudaDevice device;
  Trainer trainer(device, net, {.batch = 16, .seed = 6, .room_to_grow = true});
  auto step = [&](int i) {
    const Batch b = random_batch(16, 50 + static_cast<unsigned>(i));
    trainer.train_step(b.images.data(), b.labels.data());
  };
  step(0);
  trainer.apply({.mode = OffloadMode::all, .transfer = TransferMode::sync});
  step(1);
  trainer.apply({.mode = OffloadMode::conv, .order = AllocOrder::derivative_first, .heuristic = "high-end"});
  step(2);
  trainer.apply({.mode = OffloadMode::aconv, .transfer = TransferMode::async, .heuristic = "smartpool"});
  step(3);
  EXPECT_EQ(trainer.param_checksum(), base);
  // Evaluation at another batch size plans new shapes after the arena is
  // reserved; they run too.
  const Batch b = random_batch(5, 99);
  const IterationResult r = trainer.eval_step(b.images.data(), b.labels.data(), 5);
  EXPECT_TRUE(std::isfinite(r.loss));
}

// With vDNN++'s async transfers the offload stream copies while the compute
// stream runs the next layers: in the spans the executor reports (device
// event times), offloads overlap forward layers in time.
TEST(GpuTraining, AsyncOffloadsOverlapForwardCompute) {
  TIDEPOOL_REQUIRE_GPU();
  const Network net = models::make_model("resnet18", models::InputKind::cifar, 10);
  CudaDevice device;
  RingSink ring;
  Trainer trainer(
      device, net,
      {.batch = 64, .memory = {.mode = OffloadMode::all, .transfer = TransferMode::async}, .seed = 3},
      &ring);
  for (unsigned i = 0; i < 3; ++i) {
    const Batch b = random_batch(64, 5 + i, {.pixels = 3 * 32 * 32, .classes = 10});
    trainer.train_step(b.images.data(), b.labels.data());
  }
  const RingSnapshot snap = ring.snapshot();
  std::vector<SpanEvent> offloads, forwards;
  for (const SpanEvent& e : snap.spans) {
    if (e.iteration != 2) continue;  // a warm iteration
    EXPECT_LE(e.start_us, e.end_us) << e.layer << e.tensor;
    if (e.kind == SpanKind::offload) offloads.push_back(e);
    if (e.kind == SpanKind::forward) forwards.push_back(e);
  }
  ASSERT_GT(offloads.size(), 10u);
  ASSERT_GT(forwards.size(), 10u);
  double offload_time = 0, overlapped = 0, bytes = 0;
  for (const SpanEvent& t : offloads) {
    offload_time += t.end_us - t.start_us;
    bytes += static_cast<double>(t.bytes);
    for (const SpanEvent& c : forwards)
      overlapped += std::max(0.0, std::min(t.end_us, c.end_us) - std::max(t.start_us, c.start_us));
  }
  EXPECT_GT(overlapped, 0.1 * offload_time)
      << "offloads overlapped forward layers for " << overlapped << " of " << offload_time << " us";
  // The copies ran at a real link's speed (pinned memory over PCIe or
  // NVLink-C2C: well above 1 GB/s), so they were asynchronous DMA, not
  // staged through pageable memory.
  EXPECT_GT(bytes / offload_time * 1e-3, 1.0) << "GB/s";
}

}  // namespace
}  // namespace tidepool
