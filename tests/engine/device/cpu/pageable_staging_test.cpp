// The cpu device's pageable region (Zhuang's pageable host memory): a copy
// that reads or writes it is staged through the copying stream's pinned
// buffer, a buffer at a time, as the CUDA driver stages one; and copy_sync
// runs in the compute stream's order, from any host thread.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/device/cpu/cpu_device.h"

namespace tidepool {
namespace {

bool inside(const std::byte* p, const std::byte* base, std::size_t bytes) { return p >= base && p < base + bytes; }

std::vector<std::byte> pattern(std::size_t bytes, unsigned seed) {
  std::vector<std::byte> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return v;
}

TEST(PageableStaging, ThePageableRegionAndTheStagingBuffersAreApartFromThePinnedRegion) {
  CpuDevice device;
  std::byte* pinned = device.reserve_pinned(1 << 20);
  std::byte* pageable = device.reserve_pageable(3 << 20);
  EXPECT_EQ(device.pageable_bytes(), std::size_t{3} << 20);
  EXPECT_EQ(device.pinned_bytes(), std::size_t{1} << 20) << "the staging buffers are the device's, as the driver's are";
  EXPECT_FALSE(inside(pageable, pinned, 1 << 20));
  EXPECT_FALSE(inside(pinned, pageable, 3 << 20));
  for (Stream s : {Stream::compute, Stream::offload, Stream::prefetch}) {
    const std::byte* staging = device.staging_buffer(s);
    ASSERT_NE(staging, nullptr) << to_string(s);
    EXPECT_FALSE(inside(staging, pinned, 1 << 20));
    EXPECT_FALSE(inside(staging, pageable, 3 << 20));
  }
  EXPECT_NE(device.staging_buffer(Stream::offload), device.staging_buffer(Stream::prefetch));
  EXPECT_THROW(device.reserve_pageable(1 << 20), DeviceError) << "once";
}

TEST(PageableStaging, CopiesToAndFromPageableMemoryGoThroughTheStagingBufferInChunks) {
  CpuDevice device;
  // Two and a half buffers, so that the last chunk is a partial one.
  const std::size_t bytes = 2 * kPageableStagingBytes + kPageableStagingBytes / 2;
  std::byte* arena = device.reserve_arena(2 * bytes);
  std::byte* pinned = device.reserve_pinned(bytes);
  std::byte* pageable = device.reserve_pageable(bytes);
  const std::vector<std::byte> data = pattern(bytes, 7);
  std::memcpy(arena, data.data(), bytes);

  device.copy_async(Stream::offload, pinned, arena, bytes);
  device.synchronize();
  EXPECT_EQ(device.staged_bytes(), 0u) << "pinned memory is copied to directly";

  device.copy_async(Stream::offload, pageable, arena, bytes);
  device.synchronize();
  EXPECT_EQ(device.staged_bytes(), bytes);
  EXPECT_EQ(std::memcmp(pageable, data.data(), bytes), 0);
  // The last chunk went through the offload stream's buffer.
  EXPECT_EQ(std::memcmp(device.staging_buffer(Stream::offload), data.data() + 2 * kPageableStagingBytes,
                        kPageableStagingBytes / 2),
            0);

  device.copy_async(Stream::prefetch, arena + bytes, pageable, bytes);
  device.synchronize();
  EXPECT_EQ(device.staged_bytes(), 2 * bytes);
  EXPECT_EQ(std::memcmp(arena + bytes, data.data(), bytes), 0);
  EXPECT_EQ(std::memcmp(device.staging_buffer(Stream::prefetch), data.data() + 2 * kPageableStagingBytes,
                        kPageableStagingBytes / 2),
            0);
}

TEST(PageableStaging, ACopyBetweenTwoPageablePlacesIsRefused) {
  CpuDevice device;
  std::byte* pageable = device.reserve_pageable(1 << 10);
  EXPECT_THROW(device.copy_async(Stream::offload, pageable, pageable + 512, 512), std::invalid_argument);
}

TEST(CopySync, RunsInTheComputeStreamsOrderFromAnotherThread) {
  CpuDevice device;
  std::byte* arena = device.reserve_arena(1 << 12);
  std::vector<std::int32_t> host(1, 0);
  // Compute work queued before the copy writes what the copy reads; it is
  // slow, so a copy that did not wait for it would read the old value.
  device.submit(Stream::compute, [arena](Kernels&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const std::int32_t v = 42;
    std::memcpy(arena, &v, sizeof v);
  });
  std::thread copier([&] { device.copy_sync(host.data(), arena, sizeof(std::int32_t)); });
  copier.join();
  EXPECT_EQ(host[0], 42);

  // Compute work queued after the copy (from this thread, once it returned)
  // sees what it copied into the arena.
  const std::int32_t v = 7;
  std::thread writer([&] { device.copy_sync(arena + 64, &v, sizeof v); });
  writer.join();
  std::int32_t seen = 0;
  device.submit(Stream::compute, [&](Kernels&) { std::memcpy(&seen, arena + 64, sizeof seen); });
  device.synchronize();
  EXPECT_EQ(seen, 7);
}

TEST(CopySync, AStagedSynchronousCopyUsesTheComputeStreamsBuffer) {
  CpuDevice device;
  const std::size_t bytes = kPageableStagingBytes + 4096;
  std::byte* arena = device.reserve_arena(bytes);
  std::byte* pageable = device.reserve_pageable(bytes);
  const std::vector<std::byte> data = pattern(bytes, 3);
  std::memcpy(pageable, data.data(), bytes);
  device.copy_sync(arena, pageable, bytes);
  EXPECT_EQ(std::memcmp(arena, data.data(), bytes), 0);
  EXPECT_EQ(device.staged_bytes(), bytes);
  EXPECT_EQ(std::memcmp(device.staging_buffer(Stream::compute), data.data() + kPageableStagingBytes, 4096), 0);
}

TEST(CopySync, SaysSoWhenTheComputeStreamFailedBeforeIt) {
  CpuDevice device;
  std::byte* arena = device.reserve_arena(64);
  std::int32_t host = 0;
  device.submit(Stream::compute, [](Kernels&) { throw std::runtime_error("a kernel failed"); });
  EXPECT_THROW(device.copy_sync(&host, arena, sizeof host), DeviceError);
  EXPECT_THROW(device.synchronize(), std::runtime_error) << "the host still hears the kernel's own failure";
}

}  // namespace
}  // namespace tidepool
