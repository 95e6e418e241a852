// The executor and trainer end to end on the cpu device: the planner's
// predictions hold, training is deterministic and learns, and the gradients
// the schedule wires together are the network's true gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/device/cpu/cpu_device.h"
#include "engine/memory/pool_search.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::quadrant_batch;
using testing::Recorder;

TEST(Executor, PredictedPeakLoadEqualsObserved) {
  const Network net = testing::residual_net();
  for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p}) {
    CpuDevice device;
    Recorder rec;
    Trainer trainer(device, net, {.batch = 8, .memory = {.scheme = scheme}, .seed = 3}, &rec);
    const Batch b = quadrant_batch(8, 1);
    const IterationResult r = trainer.train_step(b.images.data(), b.labels.data());
    std::size_t observed = 0;
    for (const LoadSample& l : rec.loads)
      if (l.iteration == 0) observed = std::max(observed, l.load_bytes);
    EXPECT_EQ(observed, trainer.train_schedule().peak_load_bytes);
    EXPECT_EQ(r.memory.peak_load_bytes, trainer.train_schedule().peak_load_bytes);
    // The dry run's footprint is the real run's footprint: same policy, same sequence.
    EXPECT_EQ(r.memory.footprint_bytes, search_pool_size(trainer.train_schedule(), "best-fit").pool_bytes);
    ASSERT_EQ(rec.iterations.size(), 1u);
    EXPECT_EQ(rec.iterations[0].peak_load_bytes, observed);
  }
}

// The loss is read back into a pinned slot the plan sizes (a cuda device
// would hold the host on a copy into pageable memory): the run reserves
// it even when nothing is offloaded and the caller stages nothing, and
// the loss and accuracy come back through it.
TEST(Executor, ReadsTheLossBackThroughAPinnedSlotThePlanSizes) {
  const Network net = testing::residual_net();
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .seed = 3});
  const MemoryPlan& plan = trainer.memory();
  EXPECT_GE(plan.readback_pinned_bytes, 3 * sizeof(float));
  EXPECT_EQ(device.pinned_bytes(), plan.readback_pinned_bytes + plan.offload_host_bytes);
  EXPECT_EQ(device.pinned_bytes(), plan.host_layout(0).pinned_bytes) << "the trainer reserves the plan's layout";
  const Batch b = quadrant_batch(8, 1);
  const IterationResult r = trainer.train_step(b.images.data(), b.labels.data());
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_GT(r.loss, 0.0f);
  EXPECT_GE(r.correct, 0);
  EXPECT_LE(r.correct, r.correct_top5);
  EXPECT_LE(r.correct_top5, 8);
}

TEST(Executor, EmitsASpanPerComputeStepInOrder) {
  const Network net = testing::residual_net();
  CpuDevice device;
  Recorder rec;
  Trainer trainer(device, net, {.batch = 4, .seed = 1}, &rec);
  const Batch b = quadrant_batch(4, 2);
  trainer.train_step(b.images.data(), b.labels.data());
  int forward = 0, backward = 0, prefetch = 0;
  double last_end = 0;
  for (const SpanEvent& s : rec.spans) {
    EXPECT_LE(s.start_us, s.end_us);
    if (s.stream == Stream::compute && s.kind != SpanKind::wait) {
      EXPECT_GE(s.start_us, last_end) << "compute spans overlap on one stream";
      last_end = s.end_us;
    }
    forward += s.kind == SpanKind::forward;
    backward += s.kind == SpanKind::backward;
    prefetch += s.kind == SpanKind::prefetch;
  }
  EXPECT_EQ(forward, static_cast<int>(net.nodes().size()));
  EXPECT_EQ(backward, static_cast<int>(net.nodes().size()));
  EXPECT_EQ(prefetch, 2) << "images and labels come in on the prefetch stream";
  int allocs = 0, frees = 0;
  for (const AllocEvent& a : rec.allocs) (a.is_free() ? frees : allocs) += a.iteration == 0;
  EXPECT_EQ(allocs, frees) << "every tensor of an iteration is freed within it";
}

TEST(Trainer, SameSeedGivesBitIdenticalParameters) {
  const Network net = testing::residual_net();
  auto run = [&](std::uint64_t seed, ConvScheme scheme) {
    CpuDevice device;
    Trainer trainer(device, net, {.batch = 8, .memory = {.scheme = scheme}, .seed = seed});
    for (unsigned i = 0; i < 3; ++i) {
      const Batch b = quadrant_batch(8, 10 + i);
      trainer.train_step(b.images.data(), b.labels.data());
    }
    return trainer.param_checksum();
  };
  EXPECT_EQ(run(7, ConvScheme::p), run(7, ConvScheme::p));
  EXPECT_EQ(run(7, ConvScheme::m), run(7, ConvScheme::m));
  EXPECT_NE(run(7, ConvScheme::p), run(8, ConvScheme::p));
}

TEST(Trainer, LearnsAToyProblem) {
  const Network net = testing::residual_net(true, false);
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 32, .seed = 1, .sgd = {.lr = 0.05f}});
  float first = 0, last = 0;
  for (unsigned i = 0; i < 60; ++i) {
    const Batch b = quadrant_batch(32, 100 + i);
    const float loss = trainer.train_step(b.images.data(), b.labels.data()).loss;
    ASSERT_TRUE(std::isfinite(loss));
    if (i < 5) first += loss / 5;
    if (i >= 55) last += loss / 5;
  }
  EXPECT_LT(last, 0.5f * first);
  const Batch test = quadrant_batch(20, 999);
  const IterationResult r = trainer.eval_step(test.images.data(), test.labels.data(), 20);
  EXPECT_GE(r.correct, 16) << "eval accuracy on the toy problem";
}

// With lr = 1 and no momentum or decay, one SGD step subtracts exactly the
// gradient, which we compare with central differences of the loss along
// random directions (the network has no batchnorm or dropout, so the
// evaluation forward pass computes the same loss as training).
TEST(Trainer, NetworkGradientMatchesFiniteDifferences) {
  const Network net = testing::residual_net(false, false);
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 4, .seed = 5, .sgd = {.lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f}});
  const Batch b = quadrant_batch(4, 42);
  const std::vector<float> w0 = trainer.read_parameters();
  trainer.train_step(b.images.data(), b.labels.data());
  const std::vector<float> w1 = trainer.read_parameters();
  std::vector<double> grad(w0.size());
  for (std::size_t i = 0; i < w0.size(); ++i) grad[i] = static_cast<double>(w0[i]) - w1[i];

  std::mt19937 rng(9);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<double> d(w0.size());
    double norm = 0;
    for (double& v : d) {
      v = normal(rng);
      norm += v * v;
    }
    for (double& v : d) v /= std::sqrt(norm);
    const double eps = 1e-2;
    auto loss_at = [&](double sign) {
      std::vector<float> w(w0.size());
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(w0[i] + sign * eps * d[i]);
      trainer.write_parameters(w);
      return static_cast<double>(trainer.eval_step(b.images.data(), b.labels.data(), 4).loss);
    };
    const double numeric = (loss_at(1) - loss_at(-1)) / (2 * eps);
    double analytic = 0;
    for (std::size_t i = 0; i < d.size(); ++i) analytic += grad[i] * d[i];
    EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::abs(numeric)) << "direction " << trial;
  }
}

TEST(Trainer, PoolTooSmallSaysWhatIsNeeded) {
  const Network net = testing::residual_net();
  CpuDevice device;
  try {
    Trainer trainer(device, net, {.batch = 8, .memory = {.budget_bytes = 4096}});
    FAIL() << "a 4 KiB pool cannot hold the network";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("smallest budget that works"), std::string::npos) << e.what();
  }
}

TEST(Trainer, RejectsUnknownHeuristicAndBadBatch) {
  const Network net = testing::residual_net();
  CpuDevice device;
  EXPECT_THROW(Trainer(device, net, {.batch = 8, .memory = {.heuristic = "nope"}}), std::invalid_argument);
  EXPECT_THROW(Trainer(device, net, {.batch = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool

namespace tidepool {
namespace {

// The plan lays out the host memory and the trainer only executes it: the
// caller's staging first, the loss read-back after it, the offloads' slots
// last, in one pinned region (or, pageable, the slots apart).
TEST(MemoryPlan, LaysOutTheHostMemoryTheTrainerReserves) {
  const Network net = testing::residual_net();
  for (HostMemory host : {HostMemory::pinned, HostMemory::pageable}) {
    SCOPED_TRACE(to_string(host));
    CpuDevice device;
    Trainer trainer(device, net,
                    {.batch = 8, .memory = {.mode = OffloadMode::all, .host_memory = host}, .staging_bytes = 4096});
    const MemoryPlan& plan = trainer.memory();
    ASSERT_GT(plan.offload_host_bytes, 0u);
    const MemoryPlan::HostLayout l = plan.host_layout(4096);
    EXPECT_EQ(l.staging.offset, 0u);
    EXPECT_EQ(l.staging.bytes, 4096u);
    EXPECT_EQ(l.readback.offset, 4096u);
    EXPECT_EQ(l.readback.bytes, plan.readback_pinned_bytes);
    EXPECT_EQ(l.slots.bytes, plan.offload_host_bytes);
    EXPECT_EQ(l.pageable_slots, host == HostMemory::pageable);
    if (host == HostMemory::pinned) {
      EXPECT_EQ(l.slots.offset, l.readback.end());
      EXPECT_EQ(l.pinned_bytes, l.slots.end());
    } else {
      EXPECT_EQ(l.pinned_bytes, l.readback.end());
      EXPECT_EQ(device.pageable_bytes(), l.slots.bytes);
    }
    EXPECT_EQ(device.pinned_bytes(), l.pinned_bytes);
    EXPECT_EQ(trainer.staging().size(), 4096u);
  }
}

}  // namespace
}  // namespace tidepool
