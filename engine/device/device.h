// The device boundary. Everything above it (planner, executor, trainer, UI)
// talks to a Device; backends live in mirrored folders (cpu/, cuda/) and are
// the only code that includes oneDNN, CUDA or cuDNN headers.
//
// A device has:
//  - one arena of device memory, reserved once; the allocators hand out
//    offsets inside it and nothing else allocates device memory per tensor;
//  - one pinned-host region, reserved once, for offloaded tensors and
//    staged input batches; and where offloads wait in pageable memory
//    instead (Zhuang's choice, HostMemory::pageable), one pageable region,
//    which copies reach through the device's own pinned staging buffers;
//  - four streams (compute, offload = device→host, prefetch = host→device,
//    comm = data-parallel gradient all-reduces) with events to order them
//    against each other and the host;
//  - a table of kernels, run on the compute stream.
//
// Usage (what the executor does for one layer):
//
//   device.wait(Stream::compute, *prefetched);          // input is back
//   auto start = device.record(Stream::compute);
//   device.submit(Stream::compute, [=](Kernels& k) { k.relu_forward(n, DType::f32, x, y); });
//   auto end = device.record(Stream::compute);
//   ...
//   device.synchronize(*end);
//   double us = device.elapsed_us(*start, *end);
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device/kernels.h"

namespace tidepool {

class PerfModel;     // engine/perf/perf_model.h
class Communicator;  // engine/comm/communicator.h

enum class Stream : int { compute = 0, offload = 1, prefetch = 2, comm = 3 };
inline constexpr int kStreamCount = 4;
const char* to_string(Stream s);

// A copy to or from pageable host memory goes through a pinned staging
// buffer, as the CUDA driver's do: the link moves the bytes between the
// device and the buffer, and a host memcpy between the buffer and pageable
// memory, a buffer's worth at a time. The cpu device keeps one buffer of
// this size per stream that copies (offload, prefetch, and compute for the
// synchronous copies), so that concurrent copies do not share one; the
// MemoryPlan counts them as the pinned memory pageable offloads take.
// The CUDA driver's own buffers are of this order (a few MiB; their size
// is not documented) and are not ours to count.
inline constexpr std::size_t kPageableStagingBytes = std::size_t{4} << 20;
inline constexpr std::size_t kPageableStagingBuffers = 3;  // compute, offload, prefetch: the streams that copy

// A point in a stream's work: complete once everything submitted to that
// stream before it has finished. Owned by whoever recorded it (RAII).
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
};

struct DeviceCaps {
  std::string name;           // "cpu", "cuda:0 (NVIDIA H100 ...)"
  bool async_streams = true;  // streams run concurrently with each other and the host
  std::size_t memory_bytes = 0;  // total device memory, 0 when unbounded (the host)
  // Copies over a simulated host link whose speed can be set
  // (Device::set_link_gbps); otherwise they run at the real link's speed.
  bool simulated_link = false;
  // Kernels compute values (false: the sim device, which only models their
  // time; losses and parameters read back are zeros, "no numbers").
  bool computes_values = true;
  // Host threads other than the executor's may make copies (copy_sync):
  // false for the sim device, whose streams are clocks the executor moves.
  bool host_copies = true;
  // Some kernels are chosen by timing them (the cuda device's `p`
  // convolutions): kernel_choices() below then has lines to share.
  bool times_kernels = false;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceCaps caps() const = 0;

  // Memory. Each may be called once; the returned pointers stay valid for
  // the device's lifetime. A request the device cannot serve throws
  // DeviceError with the figures.
  virtual std::byte* reserve_arena(std::size_t bytes) = 0;
  virtual std::byte* reserve_pinned(std::size_t bytes) = 0;
  virtual std::size_t arena_bytes() const = 0;
  virtual std::size_t pinned_bytes() const = 0;
  // Ordinary (pageable) host memory for offloaded tensors, for
  // HostMemory::pageable; may be called once. A copy that reads or writes
  // it is staged (kPageableStagingBytes): on the cpu device through pinned
  // buffers the device reserves here, on the cuda device by the driver.
  virtual std::byte* reserve_pageable(std::size_t bytes) = 0;
  virtual std::size_t pageable_bytes() const = 0;

  // Work on streams, in submission order per stream.
  virtual void submit(Stream, std::function<void(Kernels&)> work) = 0;
  // Copies between device memory (arena) and host memory (pinned region or
  // any host buffer), ordered on the given stream.
  virtual void copy_async(Stream, void* dst, const void* src, std::size_t bytes) = 0;
  // A copy the calling host thread waits for, made on the device's default
  // stream as cudaMemcpy's are: in the compute stream's order (after the
  // compute work queued before it, before the compute work queued after),
  // because the default stream synchronises with the others. It may be
  // called from any host thread (engine/run/copy_threads.h calls it from
  // its own), concurrently with the executor's calls. A device whose
  // streams are virtual clocks (caps().host_copies false) throws.
  virtual void copy_sync(void* dst, const void* src, std::size_t bytes) = 0;
  // Runs `work` on a host thread in the stream's order: after everything
  // submitted to the stream before it, before anything submitted after.
  // For host-side processing of what a transfer brought (compressing an
  // offloaded tensor, engine/run/zero_value_store.h). `work` must not use the
  // device; an exception it throws is reported like a failed kernel's.
  virtual void host_task(Stream, std::function<void()> work) = 0;

  // Data-parallel training: `data` (`count` f32 in device memory) summed
  // in place over the communicator's ranks, in the stream's order. Every
  // rank issues the same all-reduces in the same order. The default runs
  // the communicator's host all-reduce as a host task, which is right for
  // a device whose memory the host can address (cpu); the cuda device
  // brings its own (NCCL on its stream, or a copy through pinned host
  // memory), the sim device models the time.
  virtual void all_reduce(Stream stream, float* data, std::size_t count, Communicator& comm);
  // The same for f64 (--sync-bn's per-channel sums, Kernels::batchnorm_sums).
  virtual void all_reduce(Stream stream, double* data, std::size_t count, Communicator& comm);

  // Events.
  virtual std::unique_ptr<DeviceEvent> record(Stream) = 0;
  virtual void wait(Stream waiter, const DeviceEvent&) = 0;  // the stream waits, not the host
  virtual void synchronize(const DeviceEvent&) = 0;          // the host waits
  virtual bool done(const DeviceEvent&) = 0;                 // non-blocking query
  virtual void synchronize() = 0;                            // all streams drained
  // Microseconds between two completed events.
  virtual double elapsed_us(const DeviceEvent& from, const DeviceEvent& to) = 0;
  // Microseconds since the device was created at which the event completed;
  // the same clock as now_us().
  virtual double time_us(const DeviceEvent&) = 0;
  virtual double now_us() const = 0;

  // The simulated host link's speed for copies submitted from now on, GB/s
  // (1e9 bytes/s; 0 = unthrottled). A device with a real link
  // (caps().simulated_link false) refuses anything but 0 with
  // std::invalid_argument, naming itself.
  virtual void set_link_gbps(double gbps) {
    if (gbps != 0)
      throw std::invalid_argument(caps().name + " copies over its real host link at its own speed; only a device "
                                  "that simulates its link (cpu) can be throttled");
  }

  // The performance model the device runs on (the sim device), which
  // planners use to predict; null for a device that runs at its own speed.
  virtual const PerfModel* perf_model() const { return nullptr; }

  // The kernel table, for pure queries from the host (workspace sizes). To
  // run a kernel, submit() work to a stream.
  virtual Kernels& kernels() = 0;

  // The choices the device made by timing its kernels (the cuda device's
  // `p` convolution algorithms), one line each, and a way to make them
  // again: a device given lines before it plans uses their choices instead
  // of timing, so a resumed run (the checkpoint keeps them) and every rank
  // of a data-parallel run (rank 0's are sent to the others) run the same
  // algorithms and compute the same bits. Devices that time nothing have
  // none and ignore what they are given. A line for another GPU or library
  // version whose algorithm is not available here is passed over and that
  // shape is timed again.
  virtual std::vector<std::string> kernel_choices() const { return {}; }
  virtual void adopt_kernel_choices(const std::vector<std::string>& lines) { (void)lines; }

  // Names for profilers. range_push opens a range called `name` (the layer
  // or tensor that the work submitted next belongs to) for the stream, and
  // range_pop closes the innermost open one; the executor pairs them around
  // each step's submissions, so ranges nest and never interleave. They only
  // annotate: they never change what runs or when. The defaults do nothing
  // (the cpu device); the cuda device emits NVTX ranges, so Nsight Systems
  // shows our layer and tensor names.
  virtual void range_push(Stream, const std::string& name) {}
  virtual void range_pop(Stream) {}
};

// Failures a user can cause or meet (out of memory, a bad setting) and that
// they should be told about in words.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tidepool
