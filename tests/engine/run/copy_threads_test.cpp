// CopyEngine::threads' copy threads (Zhuang's CPU multithreading): a copy
// starts only after the events it was issued after and the copy it
// depends on, and a failure reaches the executor.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "engine/device/cpu/cpu_device.h"
#include "engine/run/copy_threads.h"

namespace tidepool {
namespace {

// Compute work that writes `value` into `at` after a while, so that a copy
// not ordered after it would read what was there before.
std::shared_ptr<DeviceEvent> slow_write(CpuDevice& device, std::byte* at, std::int32_t value) {
  device.submit(Stream::compute, [at, value](Kernels&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::memcpy(at, &value, sizeof value);
  });
  return device.record(Stream::compute);
}

TEST(CopyThreads, AnOffloadCopiesWhatTheEventItWaitsForProduced) {
  CpuDevice device;
  std::byte* arena = device.reserve_arena(4096);
  std::int32_t host = 0;
  CopyThreads copies(device);
  auto produced = slow_write(device, arena, 11);
  auto copy = copies.issue(Stream::offload, {produced}, &host, arena, sizeof host);
  copies.wait(*copy);
  EXPECT_EQ(host, 11);
  EXPECT_LE(copy->start_us, copy->end_us);
  EXPECT_GE(copy->start_us, device.time_us(*produced)) << "the copy began once its data was there";
  copies.drain();
}

TEST(CopyThreads, APrefetchWaitsForItsOffloadOnTheOtherThread) {
  CpuDevice device;
  std::byte* arena = device.reserve_arena(4096);
  std::byte* host = device.reserve_pinned(64);
  CopyThreads copies(device);
  auto produced = slow_write(device, arena, 23);
  auto offload = copies.issue(Stream::offload, {produced}, host, arena, 4);
  // The prefetch is issued after compute work that does not touch the
  // data: only the offload orders it.
  std::shared_ptr<DeviceEvent> freed = device.record(Stream::compute);
  auto prefetch = copies.issue(Stream::prefetch, {freed}, arena + 128, host, 4, offload);
  copies.wait(*prefetch);
  std::int32_t back = 0;
  std::memcpy(&back, arena + 128, sizeof back);
  EXPECT_EQ(back, 23);
  EXPECT_GE(prefetch->start_us, offload->end_us);
  copies.drain();
}

TEST(CopyThreads, AFailedCopyIsRethrownByWaitAndByDrainWhenNobodyWaited) {
  CpuDevice device;
  std::byte* arena = device.reserve_arena(64);
  std::shared_ptr<DeviceEvent> start = device.record(Stream::compute);
  {
    CopyThreads copies(device);
    auto bad = copies.issue(Stream::offload, {start}, nullptr, arena, 16);  // a null destination
    EXPECT_THROW(copies.wait(*bad), std::invalid_argument);
    EXPECT_NO_THROW(copies.drain()) << "already reported by wait";
  }
  {
    CopyThreads copies(device);
    auto bad = copies.issue(Stream::prefetch, {start}, arena, nullptr, 16);
    EXPECT_THROW(copies.drain(), std::invalid_argument);
    EXPECT_NO_THROW(copies.drain()) << "reported once";
  }
  {
    CopyThreads copies(device);
    auto bad = copies.issue(Stream::offload, {start}, nullptr, arena, 16);
    auto after = copies.issue(Stream::prefetch, {start}, arena, arena + 32, 16, bad);
    EXPECT_THROW(copies.wait(*after), std::invalid_argument) << "a copy after a failed one fails with it";
    EXPECT_NO_THROW(copies.drain()) << "that failure was the one reported";
  }
}

TEST(CopyThreads, TheComputeStreamHasNoCopyThread) {
  CpuDevice device;
  CopyThreads copies(device);
  std::int32_t a = 0, b = 0;
  EXPECT_THROW(copies.issue(Stream::compute, {}, &a, &b, sizeof a), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
