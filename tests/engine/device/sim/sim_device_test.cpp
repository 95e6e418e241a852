// The sim device: virtual time from the performance model on the same
// streams and events as the real devices, the real allocators, no values.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/device/gpu_queries.h"
#include "engine/plan/planner.h"
#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"
#include "engine/perf/step_work.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"

namespace tidepool {
namespace {

Profile test_profile(std::size_t memory = 0) {
  Profile p = *specification_profile("m40");
  p.memory_bytes = memory ? memory : p.memory_bytes;
  return p;
}

TEST(SimDevice, AKernelTakesTheModelsTimeOnItsStream) {
  SimDevice device{PerfModel(test_profile())};
  const ConvShape s{.n = 64, .c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  auto start = device.record(Stream::compute);
  device.submit(Stream::compute, [&](Kernels& k) { k.conv_forward(s, ConvScheme::m, nullptr, nullptr, nullptr, nullptr, nullptr); });
  auto end = device.record(Stream::compute);
  EXPECT_DOUBLE_EQ(device.elapsed_us(*start, *end), device.model().compute_us({WorkClass::conv_forward, s.flops(), 1}));
  EXPECT_EQ(device.now_us(), 0) << "the host has not waited yet";
  device.synchronize(*end);
  EXPECT_DOUBLE_EQ(device.now_us(), device.time_us(*end));
}

TEST(SimDevice, StreamsOverlapAndWaitsOrderThem) {
  SimDevice device{PerfModel(test_profile())};
  std::byte* arena = device.reserve_arena(64 << 20);
  std::byte* pinned = device.reserve_pinned(64 << 20);
  const std::size_t bytes = 12'000'000;  // 1 ms + 10 µs at the M40's 12 GB/s
  const double copy_us = device.model().copy_us(bytes, true);
  EXPECT_DOUBLE_EQ(copy_us, 1010);
  device.copy_async(Stream::offload, pinned, arena, bytes);
  device.copy_async(Stream::prefetch, arena + bytes, pinned + bytes, bytes);
  auto offloaded = device.record(Stream::offload);
  auto prefetched = device.record(Stream::prefetch);
  EXPECT_DOUBLE_EQ(device.time_us(*offloaded), copy_us) << "both directions at once";
  EXPECT_DOUBLE_EQ(device.time_us(*prefetched), device.model().copy_us(bytes, false));
  device.wait(Stream::compute, *offloaded);
  device.submit(Stream::compute, [](Kernels& k) { k.relu_forward(1000, DType::f32, nullptr, nullptr); });
  auto after = device.record(Stream::compute);
  EXPECT_DOUBLE_EQ(device.time_us(*after), copy_us + device.model().compute_us({WorkClass::relu_forward, 1000, 1}));
  EXPECT_FALSE(device.done(*after));
  device.synchronize();
  EXPECT_TRUE(device.done(*after));
}

TEST(SimDevice, RefusesAnArenaLargerThanTheSimulatedGpuAndHostWork) {
  SimDevice device{PerfModel(test_profile(std::size_t{1} << 30))};
  try {
    device.reserve_arena(std::size_t{2} << 30);
    ADD_FAILURE();
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("1.00 GiB"), std::string::npos) << e.what();
  }
  EXPECT_THROW(device.host_task(Stream::offload, [] {}), DeviceError);
  EXPECT_FALSE(device.caps().computes_values);
}

// The pages of [p, p + bytes) this process holds in memory, as the kernel
// counts them (mincore): a page the device wrote, or read, is there.
std::size_t resident_pages(const std::byte* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (mincore(const_cast<std::byte*>(p), bytes, in.data()) != 0) {
    ADD_FAILURE() << "mincore: " << std::strerror(errno);
    return in.size();
  }
  return static_cast<std::size_t>(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

// An m40's 24 GiB arena on a machine that may have less: the sim device
// reserves address space and never touches it, whatever it is asked to do
// there, so not one page of the arena or the pinned region is in memory
// after kernels that write the arena and copies both ways.
TEST(SimDevice, ATwentyFourGigabyteArenaCostsNoMemory) {
  SimDevice device{PerfModel(test_profile())};
  constexpr std::size_t kArena = std::size_t{24} << 30, kPinned = std::size_t{1} << 30, kMoved = std::size_t{64} << 20;
  std::byte* arena = device.reserve_arena(kArena);
  std::byte* pinned = device.reserve_pinned(kPinned);
  ASSERT_NE(arena, nullptr);
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(device.arena_bytes(), kArena);
  EXPECT_EQ(device.pinned_bytes(), kPinned);
  auto* values = reinterpret_cast<float*>(arena);
  device.submit(Stream::compute, [&](Kernels& k) { k.fill(kMoved / sizeof(float), 1.0f, values); });
  device.submit(Stream::compute, [&](Kernels& k) { k.relu_forward(kMoved / sizeof(float), DType::f32, values, values); });
  device.copy_async(Stream::offload, pinned, arena, kMoved);
  device.copy_async(Stream::prefetch, arena + kMoved, pinned, kMoved);
  device.synchronize();
  EXPECT_GT(device.now_us(), 0.0) << "the work was done, in virtual time";
  EXPECT_EQ(resident_pages(arena, kArena), 0u) << "pages of the arena in memory";
  EXPECT_EQ(resident_pages(pinned, kPinned), 0u) << "pages of the pinned region in memory";
}

// The must-show: for the same settings the sim device places every tensor
// where the cpu device does, iteration after iteration.
// A profile measured on the cpu device simulates the cpu device: the sim
// plans with the cpu device's answers, so it places what the cpu device does.
TEST(SimDevice, PlacesEveryTensorWhereTheCpuDeviceDoesOnACpuProfile) {
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  for (OffloadMode mode : {OffloadMode::base, OffloadMode::all, OffloadMode::conv}) {
    const TrainerOptions options{.batch = 8, .memory = {.scheme = ConvScheme::m, .mode = mode, .heuristic = "best-fit"}};
    auto allocs_on = [&](Device& device) {
      testing::Recorder recorder;
      Trainer trainer(device, net, options, &recorder);
      for (int i = 0; i < 2; ++i) {
        const testing::Batch b = testing::random_batch(options.batch, 50 + i, {3 * 32 * 32, 10});
        trainer.train_step(b.images.data(), b.labels.data());
      }
      std::vector<std::tuple<std::int64_t, int, int, std::size_t, std::size_t, PoolAction>> placed;
      for (const AllocEvent& a : recorder.allocs)
        placed.emplace_back(a.iteration, a.step, a.tensor, a.offset, a.bytes, a.action);
      return placed;
    };
    CpuDevice cpu;
    Profile measured_on_cpu = test_profile();
    measured_on_cpu.kernels = ProfiledKernels::cpu;
    SimDevice sim{PerfModel(measured_on_cpu), {}, make_cpu_queries()};
    const auto on_cpu = allocs_on(cpu), on_sim = allocs_on(sim);
    EXPECT_GT(on_cpu.size(), 100u);
    EXPECT_EQ(on_sim, on_cpu) << to_string(mode);
  }
}

// A GPU profile's sim plans with that GPU's answers (GpuQueries), never the
// host's kernels: NCHW activations and the modelled cuDNN workspaces, the
// same schedule plan_schedule makes with those answers.
TEST(SimDevice, PlansWithItsGpusAnswersNotTheHosts) {
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const Profile m40 = test_profile();
  ASSERT_EQ(m40.kernels, ProfiledKernels::cuda);
  SimDevice sim{PerfModel(m40)};
  const TrainerOptions options{.batch = 16, .memory = {.scheme = ConvScheme::p, .heuristic = "best-fit"}};
  Trainer trainer(sim, net, options);
  const Schedule& s = trainer.train_schedule();
  EXPECT_EQ(s.channel_block, 0) << "cuDNN's NCHW, not oneDNN's blocks";
  const Schedule expected = plan_schedule(net, 16, {Phase::train, options.memory, {}}, GpuQueries(m40.gpu));
  ASSERT_EQ(s.tensors.size(), expected.tensors.size());
  std::size_t workspace = 0;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    EXPECT_EQ(s.tensors[t].info.bytes(), expected.tensors[t].info.bytes()) << s.tensors[t].info.name;
    if (s.tensors[t].info.role == Role::workspace) workspace += s.tensors[t].info.bytes();
  }
  EXPECT_GT(workspace, 0u) << "p's Winograd workspaces";
  EXPECT_THROW(SimDevice{PerfModel([&] {
                 Profile cpu = m40;
                 cpu.kernels = ProfiledKernels::cpu;
                 return cpu;
               }())},
               std::invalid_argument)
      << "a cpu profile without the cpu device's answers";
}

TEST(SimDevice, EachComputeSpanLastsWhatTheModelSaysForItsStep) {
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  SimDevice sim{PerfModel(test_profile())};
  testing::Recorder recorder;
  Trainer trainer(sim, net, {.batch = 32, .memory = {.mode = OffloadMode::all}}, &recorder);
  const testing::Batch b = testing::random_batch(32, 1, {3 * 32 * 32, 10});
  trainer.train_step(b.images.data(), b.labels.data());
  WorkCounter counter(sim.kernels());
  int compute = 0, copies = 0;
  for (const SpanEvent& e : recorder.spans) {
    if (e.kind == SpanKind::forward || e.kind == SpanKind::backward || e.kind == SpanKind::update) {
      const double us = sim.model().compute_us(step_work(net, trainer.train_schedule(), e.step, counter));
      EXPECT_NEAR(e.end_us - e.start_us, us, 1e-6 * std::max(1.0, us)) << e.layer;
      ++compute;
    }
    if (e.kind == SpanKind::offload) {
      EXPECT_NEAR(e.end_us - e.start_us, sim.model().copy_us(e.bytes, true), 1e-6) << e.tensor;
      ++copies;
    }
  }
  EXPECT_GT(compute, 100);
  EXPECT_GT(copies, 10);
  ASSERT_EQ(recorder.iterations.size(), 1u);
  EXPECT_EQ(recorder.iterations[0].loss, 0) << "no values: the loss read back is zero";
}

}  // namespace
}  // namespace tidepool
