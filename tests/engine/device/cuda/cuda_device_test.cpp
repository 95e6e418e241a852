// The cuda device itself: memory reserved once with clear errors, copies
// through pinned and pageable memory, events ordering streams, one clock
// for events and the host, typed errors that name the failing call.
#include "engine/device/cuda/cuda_device.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "engine/device/cuda/cuda_error.h"
#include "gpu_testing.h"

namespace tidepool {
namespace {

TEST(CudaDevice, DescribesTheGpu) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  const DeviceCaps caps = device.caps();
  EXPECT_EQ(caps.name.rfind("cuda:0 (", 0), 0u) << caps.name;
  EXPECT_TRUE(caps.async_streams);
  EXPECT_GT(caps.memory_bytes, std::size_t{1} << 30);
}

TEST(CudaDevice, ArenaAndPinnedRegionAreReservedOnce) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  std::byte* arena = device.reserve_arena(64 << 20);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(arena) % 256, 0u);
  EXPECT_EQ(device.arena_bytes(), std::size_t{64} << 20);
  EXPECT_THROW(device.reserve_arena(1 << 20), DeviceError);
  std::byte* pinned = device.reserve_pinned(8 << 20);
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(device.pinned_bytes(), std::size_t{8} << 20);
  EXPECT_THROW(device.reserve_pinned(1 << 20), DeviceError);
  CudaDevice other;
  EXPECT_THROW(other.reserve_arena(0), DeviceError);
}

TEST(CudaDevice, OutOfMemoryIsADeviceErrorWithTheFigures) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  const std::size_t absurd = device.caps().memory_bytes * 4;
  try {
    device.reserve_arena(absurd);
    FAIL() << "an arena four times the GPU's memory was granted";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of device memory"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(absurd) + " bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("free of"), std::string::npos) << what;
  }
  // The failure left nothing behind: the device still works.
  std::byte* arena = device.reserve_arena(1 << 20);
  std::vector<float> in(1000, 2.5f), out(1000, 0.0f);
  device.copy_async(Stream::compute, arena, in.data(), in.size() * sizeof(float));
  device.copy_async(Stream::compute, out.data(), arena, out.size() * sizeof(float));
  device.synchronize();
  EXPECT_EQ(out, in);
}

// Every stream's kernel table is made before the arena, and the arena leaves
// kAfterArenaBytes free (cuda_device.h): the largest arena the GPU grants
// still leaves each stream room for its work. (Tables made after the arena
// used to fail on a full GPU at the first iteration.)
TEST(CudaDevice, TheLargestArenaLeavesEveryStreamRoomToWork) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  // The largest arena the GPU grants, to cudaMalloc's 2 MiB granularity:
  // refused reservations leave nothing behind (see above).
  constexpr std::size_t kStep = std::size_t{2} << 20;
  std::byte* arena = nullptr;
  for (std::size_t bytes = device.caps().memory_bytes / kStep * kStep; !arena; bytes -= kStep) {
    ASSERT_GT(bytes, kStep) << "no arena could be reserved at all";
    try {
      arena = device.reserve_arena(bytes);
    } catch (const DeviceError&) {
    }
  }
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_GE(free_bytes, kAfterArenaBytes);
  EXPECT_LT(free_bytes, kAfterArenaBytes + 4 * kStep) << "the arena was not the largest the GPU grants";
  constexpr std::int64_t kCount = 256;
  auto* slots = reinterpret_cast<float*>(arena);
  for (int s = 0; s < kStreamCount; ++s) {
    float* slot = slots + s * kCount;
    const float value = static_cast<float>(s + 1);
    device.submit(static_cast<Stream>(s), [slot, value](Kernels& k) { k.fill(kCount, value, slot); });
  }
  device.synchronize();
  std::vector<float> back(static_cast<std::size_t>(kCount * kStreamCount));
  device.copy_async(Stream::compute, back.data(), arena, back.size() * sizeof(float));
  device.synchronize();
  for (int s = 0; s < kStreamCount; ++s)
    EXPECT_EQ(back[static_cast<std::size_t>(s * kCount)], static_cast<float>(s + 1)) << "stream " << s;
}

// A GPU others have filled refuses a new device with the out-of-memory
// message and its figures, not with whichever call failed first in its
// own words (cuDNN said CUDNN_STATUS_INTERNAL_ERROR on an H100).
TEST(CudaDevice, AFullGpuIsRefusedAsOutOfMemory) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice warm;  // the context and this process's modules exist before the GPU fills
  std::vector<void*> taken;
  for (std::size_t chunk = std::size_t{1} << 30; chunk >= (std::size_t{2} << 20);) {
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) == cudaSuccess) {
      taken.push_back(p);
    } else {
      (void)cudaGetLastError();
      chunk /= 2;
    }
  }
  std::string what;
  try {
    CudaDevice device;
  } catch (const DeviceError& e) {
    what = e.what();
  }
  for (void* p : taken) (void)cudaFree(p);
  // The GPU was filled above, so the refusal always happens: no refusal is
  // a failure, never a reason to skip.
  ASSERT_FALSE(what.empty()) << "a device was made on a GPU with less than 2 MiB free";
  EXPECT_NE(what.find("out of device memory"), std::string::npos) << what;
  EXPECT_NE(what.find("free of"), std::string::npos) << what;
}

TEST(CudaDevice, CopiesRoundTripThroughPinnedAndPageableMemoryOnEveryStream) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  const std::size_t n = 1 << 20;
  std::byte* arena = device.reserve_arena(2 * n * sizeof(float));
  auto* pinned = reinterpret_cast<float*>(device.reserve_pinned(n * sizeof(float)));
  std::iota(pinned, pinned + n, 0.0f);
  // Host (pinned) -> device on prefetch, device -> device on compute,
  // device -> host (pageable) on offload, ordered by events.
  device.copy_async(Stream::prefetch, arena, pinned, n * sizeof(float));
  auto loaded = device.record(Stream::prefetch);
  device.wait(Stream::compute, *loaded);
  device.copy_async(Stream::compute, arena + n * sizeof(float), arena, n * sizeof(float));
  auto copied = device.record(Stream::compute);
  device.wait(Stream::offload, *copied);
  std::vector<float> back(n, -1.0f);
  device.copy_async(Stream::offload, back.data(), arena + n * sizeof(float), n * sizeof(float));
  auto done = device.record(Stream::offload);
  device.synchronize(*done);
  EXPECT_TRUE(device.done(*done));
  for (std::size_t i = 0; i < n; i += 4099) ASSERT_EQ(back[i], static_cast<float>(i));
  EXPECT_THROW(device.copy_async(Stream::compute, nullptr, pinned, 4), std::invalid_argument);
}

// What the executor's loss read-back relies on: a copy from the arena into
// the pinned region is queued and returns at once, however busy the stream
// is, so the host goes on queuing the backward pass. (Into pageable memory
// CUDA returns only once the copy is done.)
TEST(CudaDevice, ACopyIntoThePinnedRegionDoesNotWaitForTheStream) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  std::byte* arena = device.reserve_arena(1 << 20);
  auto* pinned = reinterpret_cast<float*>(device.reserve_pinned(4096));
  const std::vector<float> loss = {2.5f, 7.0f, 9.0f};
  device.copy_async(Stream::compute, arena, loss.data(), loss.size() * sizeof(float));
  device.synchronize();
  // Hold the compute stream, as a forward pass would, until the copy has
  // been queued: a copy that waited for the stream would never return, and
  // ctest's timeout would fail the test (no clock is read here).
  std::promise<void> release;
  device.host_task(Stream::compute, [held = release.get_future().share()] { held.wait(); });
  device.copy_async(Stream::compute, pinned, arena, loss.size() * sizeof(float));
  auto copied = device.record(Stream::compute);
  EXPECT_FALSE(device.done(*copied)) << "the stream is still held";
  release.set_value();
  device.synchronize();
  EXPECT_EQ(std::vector<float>(pinned, pinned + 3), loss);
}

TEST(CudaDevice, EventsAndTheHostShareOneClock) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  const double before = device.now_us();
  auto a = device.record(Stream::compute);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto b = device.record(Stream::compute);
  device.synchronize();
  const double after = device.now_us();
  const double ta = device.time_us(*a), tb = device.time_us(*b);
  // Event times fall between the host readings around them (a little
  // slack for the reference's host latency)...
  EXPECT_GE(ta, before - 50.0);
  EXPECT_LE(tb, after + 50.0);
  // ...and the two events are 20 ms of host sleep apart, to the event
  // timer's precision.
  EXPECT_GE(tb - ta, 19000.0);
  EXPECT_NEAR(device.elapsed_us(*a, *b), tb - ta, 5.0);
  // The clock keeps its precision after many re-anchorings.
  for (int i = 0; i < 100; ++i) device.synchronize();
  EXPECT_NEAR(device.time_us(*b) - device.time_us(*a), tb - ta, 5.0);
}

// An event is timed from the clock reference of the last synchronize()
// before it was recorded, never backwards from a later one: its time is
// fixed once it is read, however many synchronizes follow (it used to be
// re-measured from the latest reference, with that reference's host
// latency each time).
TEST(CudaDevice, AnEventsTimeIsMeasuredFromAReferenceBeforeIt) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  auto a = device.record(Stream::offload);
  device.synchronize();
  const double after_a = device.now_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double before_b = device.now_us();
  auto b = device.record(Stream::compute);
  device.synchronize();
  const double ta = device.time_us(*a), tb = device.time_us(*b);
  EXPECT_LE(ta, after_a + 50.0);
  EXPECT_GE(tb, before_b - 50.0);
  EXPECT_GE(tb - ta, 4900.0);
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    device.synchronize();
  }
  EXPECT_EQ(device.time_us(*a), ta);
  EXPECT_EQ(device.time_us(*b), tb);
}

TEST(CudaDevice, WorkSubmittedToAStreamRunsInOrderBehindItsWaits) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  const std::int64_t n = 1 << 22;
  auto* x = reinterpret_cast<float*>(device.reserve_arena(3 * n * sizeof(float)));
  float* y = x + n;
  float* z = y + n;
  std::vector<float> ones(static_cast<std::size_t>(n), 1.0f);
  device.copy_async(Stream::prefetch, x, ones.data(), ones.size() * sizeof(float));
  auto ready = device.record(Stream::prefetch);
  device.wait(Stream::compute, *ready);
  device.submit(Stream::compute, [&](Kernels& k) {
    k.add_forward(n, DType::f32, x, x, y);  // 2
    k.accumulate(n, y, y);      // 4
    k.add_forward(n, DType::f32, y, x, z);  // 5
  });
  std::vector<float> out(static_cast<std::size_t>(n));
  device.copy_async(Stream::compute, out.data(), z, out.size() * sizeof(float));
  device.synchronize();
  for (std::size_t i = 0; i < out.size(); i += 65537) ASSERT_EQ(out[i], 5.0f);
}

// After a context error (here a kernel that reads an unmapped address)
// the driver never calls the host functions still queued. The device owns
// its host tasks, so what they captured is freed with the device instead
// of leaking. In a child process: the error is sticky and would break
// every later test of this binary.
TEST(CudaDeviceDeathTest, HostTasksThatNeverRunAreFreedWithTheDevice) {
  TIDEPOOL_REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process, not a fork of one using CUDA
  EXPECT_EXIT(
      {
        auto captured = std::make_shared<int>(7);
        const std::weak_ptr<int> watch = captured;
        bool faulted = false;
        {
          CudaDevice device;
          auto* acc = reinterpret_cast<float*>(device.reserve_arena(1 << 20));
          const auto* wild = reinterpret_cast<const float*>(
              reinterpret_cast<std::uintptr_t>(acc) + (std::uintptr_t{1} << 44));
          // The first task holds the stream until the faulting kernel and
          // the task behind it are both queued, so the fault happens after
          // (a gate, not a guessed sleep: a busy host cannot reorder them).
          std::promise<void> release;
          device.host_task(Stream::compute, [gate = release.get_future().share()] { gate.wait(); });
          device.submit(Stream::compute, [&](Kernels& k) { k.accumulate(1024, wild, acc); });
          device.host_task(Stream::compute, [held = std::move(captured)] { (void)held; });
          release.set_value();
          try {
            device.synchronize();
          } catch (const DeviceError&) {
            faulted = true;
          }
        }
        std::_Exit(!faulted ? 2 : watch.expired() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CudaDevice, KernelTablesOfTheTransferStreamsWorkToo) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  auto* x = reinterpret_cast<float*>(device.reserve_arena(1 << 20));
  std::vector<float> v(1000, 1.5f), out(1000);
  device.copy_async(Stream::offload, x, v.data(), v.size() * sizeof(float));
  device.submit(Stream::offload, [&](Kernels& k) { k.accumulate(1000, x, x); });
  device.copy_async(Stream::offload, out.data(), x, out.size() * sizeof(float));
  device.synchronize();
  EXPECT_EQ(out, std::vector<float>(1000, 3.0f));
}

TEST(CudaDevice, ShapesBeyondCudnnsIntegersAreRefusedWithTheFigures) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  device.reserve_arena(1 << 20);
  // cuDNN's descriptors take int dimensions: 2^31 channels cannot be
  // described. A DeviceError that says so, before anything runs.
  BatchNormShape bn;
  bn.n = 2, bn.c = std::int64_t{1} << 31, bn.h = bn.w = 1;
  try {
    device.submit(Stream::compute, [&](Kernels& k) {
      k.batchnorm_forward_infer(bn, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    });
    FAIL() << "a batchnorm over 2^31 channels was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit cuDNN's 32-bit dimensions"),
              std::string::npos)
        << e.what();
  }
}

// CUDA's current device is per host thread. Making a device for GPU 1
// leaves the thread there; a device for GPU 0 must still make its events,
// launches and cuDNN searches on GPU 0 (it used to bind only when its
// ordinal was not 0).
TEST(CudaDevice, WorksWhicheverGpuTheThreadWasLeftOn) {
  TIDEPOOL_REQUIRE_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  CudaDevice first({.ordinal = 0});
  CudaKernels& table = first.cuda_kernels();
  CudaDevice second({.ordinal = 1});  // the thread is on GPU 1 now
  // A workspace query straight on the table, from a thread on GPU 1: `p`
  // times algorithms with buffers of its own, which must be GPU 0's. (A
  // shape no other test uses, so this one really measures.)
  ConvShape s;
  s.n = 3, s.c = 5, s.h = s.w = 23, s.k = 7, s.r = s.s = 3, s.pad_h = s.pad_w = 1;
  (void)table.conv_workspace_bytes(s, ConvScheme::p, ConvPass::forward);
  EXPECT_TRUE(table.conv_algorithm_measured(s, ConvScheme::p, ConvPass::forward));

  (void)second.reserve_arena(1 << 20);  // back on GPU 1
  auto* x = reinterpret_cast<float*>(first.reserve_arena(1 << 20));
  (void)second.record(Stream::compute);  // and again
  std::vector<float> v(1000, 1.5f), out(1000);
  first.copy_async(Stream::prefetch, x, v.data(), v.size() * sizeof(float));
  auto loaded = first.record(Stream::prefetch);
  first.wait(Stream::compute, *loaded);
  (void)second.record(Stream::compute);
  first.submit(Stream::compute, [&](Kernels& k) { k.accumulate(1000, x, x); });
  auto computed = first.record(Stream::compute);
  (void)second.record(Stream::compute);
  first.synchronize(*computed);
  EXPECT_TRUE(first.done(*computed));
  first.copy_async(Stream::compute, out.data(), x, out.size() * sizeof(float));
  (void)second.record(Stream::compute);
  first.synchronize();
  EXPECT_EQ(out, std::vector<float>(1000, 3.0f));
  (void)second.record(Stream::compute);
  EXPECT_GE(first.elapsed_us(*loaded, *computed), 0.0);
  EXPECT_LE(first.time_us(*loaded), first.time_us(*computed));
}

// No GPU needed: the message format every CUDA, cuDNN and cuBLAS failure has.
TEST(CudaError, NamesTheCallAndTheStatusAndIsADeviceError) {
  const CudaError e(CudaError::Library::cudnn, "cudnnConvolutionForward", 3,
                    "CUDNN_STATUS_BAD_PARAM", "the filter does not match the input");
  EXPECT_STREQ(
      e.what(),
      "cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM: the filter does not match the input");
  EXPECT_EQ(e.call(), "cudnnConvolutionForward");
  EXPECT_EQ(e.status(), 3);
  const DeviceError& as_device_error = e;
  EXPECT_NE(std::string(as_device_error.what()).find("BAD_PARAM"), std::string::npos);
  // A description that only repeats the name is not printed twice.
  EXPECT_STREQ(CudaError(CudaError::Library::cuda, "cudaMalloc", 2, "cudaErrorMemoryAllocation",
                         "cudaErrorMemoryAllocation")
                   .what(),
               "cudaMalloc: cudaErrorMemoryAllocation");
}

TEST(CudaDevice, EventsFromAnotherDeviceAreRefused) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice a, b;
  auto e = a.record(Stream::compute);
  EXPECT_THROW(b.wait(Stream::compute, *e), std::invalid_argument);
  EXPECT_THROW(b.synchronize(*e), std::invalid_argument);
}

// NVTX ranges, as the executor opens them around each step's work, on
// every stream and nested: the work inside them runs and gives its values,
// and the ranges leave no CUDA error behind. (Without a profiler attached
// NVTX records nothing this test could read back: what it can check is
// that the ranges change nothing.)
TEST(CudaDevice, RangesAroundWorkOnEveryStreamLeaveItsResults) {
  TIDEPOOL_REQUIRE_GPU();
  CudaDevice device;
  constexpr std::int64_t kCount = 1024;
  auto* slots = reinterpret_cast<float*>(device.reserve_arena(kStreamCount * kCount * sizeof(float)));
  for (int i = 0; i < kStreamCount; ++i) {
    const auto s = static_cast<Stream>(i);
    float* slot = slots + i * kCount;
    const float value = static_cast<float>(i + 1);
    device.range_push(s, std::string("step on ") + to_string(s));
    device.range_push(s, "inner");
    device.submit(s, [slot, value](Kernels& k) { k.fill(kCount, value, slot); });
    device.range_pop(s);
    device.submit(s, [slot](Kernels& k) { k.accumulate(kCount, slot, slot); });  // doubled
    device.range_pop(s);
  }
  device.synchronize();
  std::vector<float> back(static_cast<std::size_t>(kStreamCount * kCount));
  device.copy_async(Stream::compute, back.data(), slots, back.size() * sizeof(float));
  device.synchronize();
  for (int i = 0; i < kStreamCount; ++i)
    for (std::int64_t j = 0; j < kCount; j += kCount - 1)
      EXPECT_EQ(back[static_cast<std::size_t>(i * kCount + j)], 2.0f * static_cast<float>(i + 1)) << to_string(static_cast<Stream>(i));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tidepool
