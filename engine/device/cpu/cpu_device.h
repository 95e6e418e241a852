// The cpu device: host memory standing in for device memory, one worker
// thread per stream, oneDNN kernels (CpuKernels) run on whichever stream's
// worker they are submitted to.
//
//  - The arena and the pinned region are plain 64-byte-aligned host blocks,
//    each reserved once and freed with the device.
//  - Each stream is a WorkerStream: tasks run in submission order, streams
//    run concurrently with each other and with the host.
//  - An event is a point in one stream's completion counter plus the time
//    the stream passed it: record() queues a marker task that stamps the
//    device clock (steady_clock, microseconds since construction).
//  - With link_gbps > 0 every copy_async takes at least bytes / link
//    bandwidth, so that compute/transfer overlap is visible on a machine
//    whose memcpy is far faster than a PCIe link.
//  - The pageable region (reserve_pageable) is ordinary host memory like
//    the others, but a copy that reads or writes it is staged as the CUDA
//    driver stages one: in chunks through the copying stream's pinned
//    staging buffer (kPageableStagingBytes), the link hop (throttled)
//    between the arena and the buffer, then a plain memcpy between the
//    buffer and pageable memory, which is host work the link does not
//    hide. staged_bytes() counts what went through the buffers.
//  - copy_sync queues its copy on the compute stream and waits for it:
//    the default stream's ordering, from whichever host thread calls it.
//
// Failures inside submitted work: the worker catches the exception and the
// device rethrows it (the original exception, not a wrapper) from the next
// host call that touches streams: submit, copy_async, record, wait, done or
// either synchronize. A failing kernel thus becomes a host error instead of
// std::terminate. Until the host has been told, the failed stream skips its
// remaining ordinary work (it would read the failed task's output) but
// keeps completing events, so no waiter hangs. If several streams failed,
// the first in stream order (compute, offload, prefetch) is rethrown and
// the others are discarded. After the rethrow the device is usable again.
//
// Host-side calls are meant to come from one thread (the executor); the
// workers and the events they complete are safe to observe from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "engine/device/cpu/worker_stream.h"
#include "engine/device/device.h"

namespace tidepool {

class CpuKernels;
class CpuDevice;

// A point in one stream's work: task number `sequence()` of `stream()`, the
// marker that record() queued. The marker stamps the device clock when the
// worker reaches it; the stamp is shared with the marker task so that the
// event may be destroyed before the marker runs.
class CpuEvent final : public DeviceEvent {
 public:
  struct Stamp {
    double time_us = 0;  // written by the worker before the marker completes
  };
  CpuEvent(const CpuDevice* device, Stream stream, std::uint64_t sequence,
           std::shared_ptr<const Stamp> stamp)
      : device_(device), stream_(stream), sequence_(sequence), stamp_(std::move(stamp)) {}

  const CpuDevice* device() const { return device_; }
  Stream stream() const { return stream_; }
  std::uint64_t sequence() const { return sequence_; }
  // Only meaningful once the event is complete (the stream's completion
  // counter, read under its lock, orders this read after the write).
  double stamped_us() const { return stamp_->time_us; }

 private:
  const CpuDevice* device_;
  Stream stream_;
  std::uint64_t sequence_;
  std::shared_ptr<const Stamp> stamp_;
};

struct CpuDeviceOptions {
  // Bandwidth of the simulated host<->device link in GB/s (1e9 bytes/s);
  // 0 = copies run at memcpy speed.
  double link_gbps = 0;
  // Niceness of the stream workers and their OpenMP pools (Linux), added to
  // the creating thread's. The
  // window sets it so that drawing gets a core the moment it needs one while
  // training takes the rest; the numbers do not depend on it.
  int worker_nice = 0;
};

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(CpuDeviceOptions options = {});
  // Finishes all queued work on every stream, then joins the workers.
  ~CpuDevice() override;
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;

  DeviceCaps caps() const override;
  const CpuDeviceOptions& options() const { return options_; }
  // Changes the simulated link for copies submitted from now on (a host
  // call like copy_async; copies already queued keep their speed). Throws
  // DeviceError for a negative or non-finite value.
  void set_link_gbps(double gbps) override;

  std::byte* reserve_arena(std::size_t bytes) override;
  std::byte* reserve_pinned(std::size_t bytes) override;
  std::size_t arena_bytes() const override { return arena_.bytes; }
  std::size_t pinned_bytes() const override { return pinned_.bytes; }
  // Also reserves the staging buffers, one per stream.
  std::byte* reserve_pageable(std::size_t bytes) override;
  std::size_t pageable_bytes() const override { return pageable_.bytes; }
  // Bytes copied through the staging buffers since the device was made
  // (each staged copy's bytes once); safe from any thread.
  std::uint64_t staged_bytes() const { return staged_bytes_.load(std::memory_order_relaxed); }
  // The staging buffer of stream `s` (null before reserve_pageable), so
  // that tests can tell it from the regions.
  const std::byte* staging_buffer(Stream s) const { return staging_[static_cast<std::size_t>(s)].memory.get(); }

  void submit(Stream, std::function<void(Kernels&)> work) override;
  void copy_async(Stream, void* dst, const void* src, std::size_t bytes) override;
  void copy_sync(void* dst, const void* src, std::size_t bytes) override;
  void host_task(Stream, std::function<void()> work) override;

  std::unique_ptr<DeviceEvent> record(Stream) override;
  void wait(Stream waiter, const DeviceEvent&) override;
  void synchronize(const DeviceEvent&) override;
  bool done(const DeviceEvent&) override;
  void synchronize() override;
  double elapsed_us(const DeviceEvent& from, const DeviceEvent& to) override;
  double time_us(const DeviceEvent&) override;
  double now_us() const override;

  Kernels& kernels() override;

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const noexcept;
  };
  // One reserved host block (the arena or the pinned region).
  struct HostBlock {
    std::unique_ptr<std::byte, FreeDeleter> memory;
    std::size_t bytes = 0;
  };
  std::byte* reserve(HostBlock& block, std::size_t bytes, const char* what);
  WorkerStream& stream(Stream s);
  // The task that copies on stream `s`: straight, or staged where one side
  // is the pageable region.
  std::function<void()> copy_task(Stream s, void* dst, const void* src, std::size_t bytes);
  bool in_pageable(const void* p) const;
  const CpuEvent& own_event(const DeviceEvent& e) const;
  // Rethrows (once) the first exception a stream's work threw.
  void rethrow_stream_error();

  CpuDeviceOptions options_;
  std::chrono::steady_clock::time_point epoch_;
  std::unique_ptr<CpuKernels> kernels_;
  HostBlock arena_;
  HostBlock pinned_;
  HostBlock pageable_;
  std::array<HostBlock, kPageableStagingBuffers> staging_;  // pinned, one per copying stream, with the pageable region
  std::atomic<std::uint64_t> staged_bytes_{0};
  // Declared last: destroyed (and joined) before the memory and kernels the
  // queued work uses.
  std::array<std::unique_ptr<WorkerStream>, kStreamCount> streams_;
};

}  // namespace tidepool
