// The cpu device's streams, events, memory and failure handling, and the
// WorkerStream underneath. Timing checks assert lower bounds only: a loaded
// CI machine can always be slower, never faster than a sleep.
#include "engine/device/cpu/cpu_device.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/device/cpu/worker_stream.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tidepool {
namespace {

using namespace std::chrono_literals;

// A task blocks on a Gate until the test opens it: the way these tests hold
// a stream busy at a known point without sleeping for a guessed duration.
// It waits with no time limit: a limit would fail a passing test on a
// machine busy enough to reach it, and a broken test that never opens its
// gate is failed by ctest's timeout instead.
class Gate {
 public:
  Gate() : future_(promise_.get_future().share()) {}
  void open() { promise_.set_value(); }
  void pass() const { future_.wait(); }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_;
};

// ---------------------------------------------------------------- WorkerStream

TEST(WorkerStream, RunsTasksInFifoOrder) {
  WorkerStream s("test");
  std::vector<int> order;  // touched only by the worker until drain() returns
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(s.enqueue([&order, i] { order.push_back(i); }), static_cast<std::uint64_t>(i + 1));
  }
  s.drain();
  std::vector<int> expected(100);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  EXPECT_EQ(s.enqueued(), 100u);
  EXPECT_EQ(s.completed(), 100u);
}

TEST(WorkerStream, WaitForBlocksUntilTheTaskFinished) {
  Gate gate;  // declared first: it must outlive the tasks blocked on it
  WorkerStream s("test");
  std::atomic<bool> ran{false};
  s.enqueue([&] { gate.pass(); });
  const auto seq = s.enqueue([&] { ran = true; });
  EXPECT_FALSE(s.reached(seq));
  gate.open();
  s.wait_for(seq);
  EXPECT_TRUE(s.reached(seq));
  EXPECT_TRUE(ran);
}

TEST(WorkerStream, WaitingForATaskNotQueuedThrows) {
  WorkerStream s("test");
  s.enqueue([] {});
  EXPECT_THROW(s.wait_for(2), std::invalid_argument);
  EXPECT_NO_THROW(s.wait_for(1));
}

TEST(WorkerStream, OneStreamWaitsOnAnother) {
  Gate gate;  // declared first: it must outlive the tasks blocked on it
  WorkerStream producer("producer");
  WorkerStream consumer("consumer");
  int value = 0;  // written by the producer, read by the consumer after its wait
  std::atomic<int> seen{-1};
  producer.enqueue([&] { gate.pass(); });
  const auto written = producer.enqueue([&] { value = 42; });
  consumer.enqueue([&] { producer.wait_for(written); });
  const auto read = consumer.enqueue([&] { seen = value; });
  EXPECT_FALSE(consumer.reached(read));
  gate.open();
  consumer.wait_for(read);
  EXPECT_EQ(seen.load(), 42);
}

TEST(WorkerStream, AFailureSkipsWorkButNotControlUntilTaken) {
  WorkerStream s("test");
  std::atomic<bool> work_ran{false}, control_ran{false};
  s.enqueue([] { throw std::runtime_error("kernel failed"); });
  s.enqueue([&] { work_ran = true; });
  s.enqueue([&] { control_ran = true; }, TaskKind::control);
  s.drain();
  EXPECT_FALSE(work_ran);  // it would have read the failed task's output
  EXPECT_TRUE(control_ran);
  EXPECT_EQ(s.completed(), 3u);  // skipped tasks still count, so waiters finish

  std::exception_ptr e = s.take_error();
  ASSERT_TRUE(e);
  EXPECT_THROW(std::rethrow_exception(e), std::runtime_error);
  EXPECT_FALSE(s.take_error());  // handed out once

  s.enqueue([&] { work_ran = true; });
  s.drain();
  EXPECT_TRUE(work_ran);
}

TEST(WorkerStream, DestructorFinishesQueuedTasks) {
  std::atomic<int> count{0};
  {
    WorkerStream s("test");
    for (int i = 0; i < 20; ++i) {
      s.enqueue([&] {
        std::this_thread::sleep_for(100us);
        ++count;
      });
    }
  }
  EXPECT_EQ(count.load(), 20);
}

TEST(WorkerStream, EnqueueAfterShutDownThrows) {
  WorkerStream s("test");
  s.shut_down();
  EXPECT_THROW(s.enqueue([] {}), std::logic_error);
  EXPECT_THROW(s.enqueue(nullptr), std::invalid_argument);
  s.shut_down();  // idempotent
}

// ------------------------------------------------------------------- CpuDevice

TEST(CpuDevice, CapsDescribeTheHost) {
  CpuDevice device;
  const DeviceCaps caps = device.caps();
  EXPECT_EQ(caps.name, "cpu");
  EXPECT_TRUE(caps.async_streams);
  EXPECT_EQ(caps.memory_bytes, 0u);
  EXPECT_EQ(device.arena_bytes(), 0u);
  EXPECT_EQ(device.pinned_bytes(), 0u);
}

TEST(CpuDevice, ReservesAlignedArenaAndPinnedRegionOnce) {
  CpuDevice device;
  std::byte* arena = device.reserve_arena(1000);
  std::byte* pinned = device.reserve_pinned(3000);
  ASSERT_NE(arena, nullptr);
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(arena) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pinned) % 64, 0u);
  EXPECT_EQ(device.arena_bytes(), 1000u);
  EXPECT_EQ(device.pinned_bytes(), 3000u);
  std::memset(arena, 1, 1000);  // the whole range is usable
  std::memset(pinned, 2, 3000);

  try {
    device.reserve_arena(1000);
    FAIL() << "second reserve_arena did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("already reserved"), std::string::npos) << e.what();
  }
  EXPECT_THROW(device.reserve_pinned(10), DeviceError);
  EXPECT_EQ(device.arena_bytes(), 1000u);  // the first reservation stands
}

TEST(CpuDevice, ReservingZeroBytesThrows) {
  CpuDevice device;
  EXPECT_THROW(device.reserve_arena(0), DeviceError);
  EXPECT_THROW(device.reserve_pinned(0), DeviceError);
  EXPECT_NO_THROW(device.reserve_arena(64));  // a failed request reserves nothing
}

TEST(CpuDevice, ReservingMoreThanTheHostHasThrowsWithTheSize) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "sanitizer allocators abort on impossible sizes instead of returning null";
#endif
  CpuDevice device;
  const std::size_t huge = std::size_t{1} << 62;  // 4 EiB
  try {
    device.reserve_arena(huge);
    FAIL() << "reserving 4 EiB did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("MiB"), std::string::npos) << e.what();
  }
  EXPECT_EQ(device.arena_bytes(), 0u);
}

TEST(CpuDevice, RejectsANegativeLinkBandwidth) {
  EXPECT_THROW(CpuDevice(CpuDeviceOptions{-1.0}), DeviceError);
}

TEST(CpuDevice, TasksOnOneStreamRunInOrder) {
  CpuDevice device;
  std::vector<int> order;  // touched only by the compute worker until synchronize
  for (int i = 0; i < 50; ++i) {
    device.submit(Stream::compute, [&order, i](Kernels&) { order.push_back(i); });
  }
  device.synchronize();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
}

#if defined(__linux__)
TEST(CpuDevice, WorkersRunAtTheRequestedNiceness) {
  const int own = getpriority(PRIO_PROCESS, 0);
  if (own > 19 - 5) GTEST_SKIP() << "this process already runs at niceness " << own;
  CpuDevice device({.worker_nice = 5});
  std::vector<int> seen(kStreamCount, -100);
  for (int i = 0; i < kStreamCount; ++i)
    device.submit(static_cast<Stream>(i), [&seen, i](Kernels&) {
      seen[static_cast<std::size_t>(i)] = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
    });
  device.synchronize();
  for (int i = 0; i < kStreamCount; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], own + 5) << "stream " << i;
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))), own) << "the host thread is left alone";
}
#endif

TEST(CpuDevice, WorkReceivesTheDevicesKernels) {
  CpuDevice device;
  Kernels* seen = nullptr;
  device.submit(Stream::compute, [&](Kernels& k) { seen = &k; });
  device.synchronize();
  EXPECT_EQ(seen, &device.kernels());
}

TEST(CpuDevice, KernelsRunOnTheComputeStream) {
  CpuDevice device;
  auto* arena = reinterpret_cast<float*>(device.reserve_arena(8 * sizeof(float)));
  const float in[4] = {-1.0f, 2.0f, -3.0f, 4.0f};
  std::memcpy(arena, in, sizeof in);
  float* x = arena;
  float* y = arena + 4;
  device.submit(Stream::compute, [x, y](Kernels& k) { k.relu_forward(4, DType::f32, x, y); });
  device.synchronize();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 4.0f);
}

TEST(CpuDevice, StreamsRunConcurrently) {
  Gate gate;  // declared first: it must outlive the tasks blocked on it
  CpuDevice device;
  std::atomic<bool> compute_ran{false}, offload_ran{false};

  // Compute is held behind an event of the prefetch stream, which is held
  // at the gate; offload must still make progress meanwhile.
  device.submit(Stream::prefetch, [&](Kernels&) { gate.pass(); });
  auto prefetched = device.record(Stream::prefetch);
  device.wait(Stream::compute, *prefetched);
  device.submit(Stream::compute, [&](Kernels&) { compute_ran = true; });
  auto computed = device.record(Stream::compute);

  device.submit(Stream::offload, [&](Kernels&) { offload_ran = true; });
  auto offloaded = device.record(Stream::offload);
  device.synchronize(*offloaded);
  EXPECT_TRUE(offload_ran);
  EXPECT_FALSE(device.done(*prefetched));
  EXPECT_FALSE(device.done(*computed));
  EXPECT_FALSE(compute_ran);

  gate.open();
  device.synchronize(*computed);
  EXPECT_TRUE(compute_ran);
  EXPECT_TRUE(device.done(*prefetched));
}

TEST(CpuDevice, WaitOrdersComputeAfterAnOffloadCopy) {
  // A throttled link makes the copy slow, so compute would read the
  // destination early if the wait did not hold it back.
  CpuDevice device(CpuDeviceOptions{1.0});
  constexpr std::size_t kFloats = 256 * 1024;  // 1 MiB: about 1 ms on the link
  auto* src = reinterpret_cast<float*>(device.reserve_arena(kFloats * sizeof(float)));
  auto* dst = reinterpret_cast<float*>(device.reserve_pinned(kFloats * sizeof(float)));
  for (std::size_t i = 0; i < kFloats; ++i) src[i] = static_cast<float>(i % 1000);
  std::memset(dst, 0, kFloats * sizeof(float));

  device.copy_async(Stream::offload, dst, src, kFloats * sizeof(float));
  auto copied = device.record(Stream::offload);
  device.wait(Stream::compute, *copied);
  double sum = 0;
  device.submit(Stream::compute, [&, dst](Kernels&) {
    for (std::size_t i = 0; i < kFloats; ++i) sum += dst[i];
  });
  auto summed = device.record(Stream::compute);
  device.synchronize(*summed);

  double expected = 0;
  for (std::size_t i = 0; i < kFloats; ++i) expected += static_cast<double>(i % 1000);
  EXPECT_EQ(sum, expected);
  // The compute stream waited for the copy, so it finished after it.
  EXPECT_GE(device.elapsed_us(*copied, *summed), 0.0);
}

TEST(CpuDevice, SynchronizeOnAnEventReturnsAfterEarlierWork) {
  CpuDevice device;
  std::atomic<bool> finished{false};
  device.submit(Stream::offload, [&](Kernels&) {
    std::this_thread::sleep_for(5ms);
    finished = true;
  });
  auto e = device.record(Stream::offload);
  device.synchronize(*e);
  EXPECT_TRUE(finished);
  EXPECT_TRUE(device.done(*e));
}

TEST(CpuDevice, DoneIsFalseWhileEarlierWorkIsPending) {
  Gate gate;  // declared first: it must outlive the tasks blocked on it
  CpuDevice device;
  device.submit(Stream::compute, [&](Kernels&) { gate.pass(); });
  auto e = device.record(Stream::compute);
  EXPECT_FALSE(device.done(*e));
  gate.open();
  device.synchronize(*e);
  EXPECT_TRUE(device.done(*e));
}

TEST(CpuDevice, EventTimesAreMonotoneAndNonNegative) {
  CpuDevice device;
  auto first = device.record(Stream::compute);
  device.submit(Stream::compute, [](Kernels&) { std::this_thread::sleep_for(2ms); });
  auto second = device.record(Stream::compute);
  auto third = device.record(Stream::compute);

  // time_us and elapsed_us wait for events that are not complete yet.
  const double t1 = device.time_us(*first);
  const double t2 = device.time_us(*second);
  const double t3 = device.time_us(*third);
  EXPECT_GE(t1, 0.0);
  EXPECT_LE(t1, t2);
  EXPECT_LE(t2, t3);
  EXPECT_LE(t3, device.now_us());
  EXPECT_GE(device.elapsed_us(*first, *second), 2000.0);
  EXPECT_GE(device.elapsed_us(*second, *third), 0.0);
  EXPECT_DOUBLE_EQ(device.elapsed_us(*first, *third), t3 - t1);
}

TEST(CpuDevice, ThrottledCopyTakesAtLeastTheLinkTime) {
  CpuDevice device(CpuDeviceOptions{1.0});  // 1 GB/s
  constexpr std::size_t kBytes = 8'000'000;  // 8 ms on the link
  std::byte* arena = device.reserve_arena(kBytes);
  std::byte* pinned = device.reserve_pinned(kBytes);
  std::memset(arena, 7, kBytes);

  auto before = device.record(Stream::prefetch);
  device.copy_async(Stream::prefetch, pinned, arena, kBytes);
  auto after = device.record(Stream::prefetch);
  EXPECT_GE(device.elapsed_us(*before, *after), 8000.0);
  EXPECT_EQ(pinned[0], std::byte{7});
  EXPECT_EQ(pinned[kBytes - 1], std::byte{7});
}

TEST(CpuDevice, UnthrottledCopyCopies) {
  CpuDevice device;
  constexpr std::size_t kBytes = 1 << 20;
  std::byte* arena = device.reserve_arena(kBytes);
  std::byte* pinned = device.reserve_pinned(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) pinned[i] = static_cast<std::byte>(i * 31);

  device.copy_async(Stream::prefetch, arena, pinned, kBytes);
  device.copy_async(Stream::prefetch, arena, pinned, 0);  // an empty copy is fine
  device.synchronize();
  EXPECT_EQ(std::memcmp(arena, pinned, kBytes), 0);
  EXPECT_THROW(device.copy_async(Stream::prefetch, nullptr, pinned, 16), std::invalid_argument);
}

TEST(CpuDevice, AnExceptionInWorkSurfacesAtTheNextSynchronize) {
  Gate gate;  // declared first: it must outlive the tasks blocked on it
  CpuDevice device;
  std::atomic<bool> later_ran{false};
  // The gate keeps the failure from happening before the second submit,
  // which would (rightly) report it.
  device.submit(Stream::compute, [&](Kernels&) {
    gate.pass();
    throw std::runtime_error("kernel exploded");
  });
  device.submit(Stream::compute, [&](Kernels&) { later_ran = true; });
  gate.open();
  try {
    device.synchronize();
    FAIL() << "synchronize did not rethrow the work's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "kernel exploded");
  }
  // Work queued behind the failure was skipped, not run on bad data.
  EXPECT_FALSE(later_ran);

  // Reported once; the device is usable afterwards.
  device.submit(Stream::compute, [&](Kernels&) { later_ran = true; });
  EXPECT_NO_THROW(device.synchronize());
  EXPECT_TRUE(later_ran);
}

TEST(CpuDevice, AFailedStreamStillCompletesEventsOthersWaitOn) {
  Gate gate;  // declared first: it must outlive the tasks blocked on it
  CpuDevice device;
  std::atomic<bool> compute_ran{false};
  device.submit(Stream::offload, [&](Kernels&) {
    gate.pass();
    throw DeviceError("copy engine on fire");
  });
  auto offloaded = device.record(Stream::offload);
  device.wait(Stream::compute, *offloaded);
  device.submit(Stream::compute, [&](Kernels&) { compute_ran = true; });
  gate.open();

  EXPECT_THROW(device.synchronize(*offloaded), DeviceError);
  device.synchronize();  // nothing hangs, and the error was reported once
  EXPECT_TRUE(compute_ran);
  EXPECT_TRUE(device.done(*offloaded));
}

TEST(CpuDevice, AnExceptionSurfacesAtTheNextSubmit) {
  Gate gate;  // declared first: it must outlive the tasks blocked on it
  CpuDevice device;
  std::promise<void> past_failure;
  // Everything is queued before the gate opens, so none of these calls can
  // see the failure yet.
  device.submit(Stream::prefetch, [&](Kernels&) {
    gate.pass();
    throw std::logic_error("bad shape");
  });
  auto failed = device.record(Stream::prefetch);
  device.wait(Stream::compute, *failed);
  // Tells the host, without a device call, that the failure is recorded.
  device.submit(Stream::compute, [&](Kernels&) { past_failure.set_value(); });
  gate.open();
  past_failure.get_future().wait();

  EXPECT_THROW(device.submit(Stream::compute, [](Kernels&) {}), std::logic_error);
  EXPECT_NO_THROW(device.submit(Stream::compute, [](Kernels&) {}));
  EXPECT_NO_THROW(device.synchronize());
}

TEST(CpuDevice, RejectsEventsOfAnotherDevice) {
  CpuDevice a, b;
  auto e = a.record(Stream::compute);
  EXPECT_THROW(b.synchronize(*e), std::invalid_argument);
  EXPECT_THROW(b.wait(Stream::compute, *e), std::invalid_argument);
  a.synchronize(*e);
}

TEST(CpuDevice, DestructionFinishesQueuedWork) {
  auto count = std::make_shared<std::atomic<int>>(0);
  {
    CpuDevice device;
    for (int i = 0; i < 10; ++i) {
      device.submit(Stream::compute, [count](Kernels&) {
        std::this_thread::sleep_for(200us);
        ++*count;
      });
    }
    device.submit(Stream::offload, [count](Kernels&) { ++*count; });
  }
  EXPECT_EQ(count->load(), 11);
}

TEST(CpuDevice, DestructionWhileAStreamWaitsOnAnother) {
  auto compute_ran = std::make_shared<std::atomic<bool>>(false);
  {
    CpuDevice device;
    device.submit(Stream::prefetch, [](Kernels&) { std::this_thread::sleep_for(10ms); });
    auto prefetched = device.record(Stream::prefetch);
    device.wait(Stream::compute, *prefetched);
    device.submit(Stream::compute, [compute_ran](Kernels&) { *compute_ran = true; });
    // The event dies first, then the device, with compute still blocked.
  }
  EXPECT_TRUE(compute_ran->load());
}

}  // namespace
}  // namespace tidepool
