// The cuda device: one GPU, its memory reserved once, four CUDA streams and
// a kernel table (cuDNN, cuBLAS, our own kernels) bound to each stream
// that runs kernels.
//
//  - Memory: reserve_arena() is one cudaMalloc for the whole run and
//    reserve_pinned() one cudaHostAlloc; both may be called once and are
//    freed with the device. Apart from them the device only holds each
//    kernel table's small scratch (a fixed cuBLAS workspace and a few
//    per-channel floats: about 4 MiB per table, 32 MiB from Hopper on,
//    made when the table is)
//    and, while starting up, the temporary buffers with which the `p`
//    conv scheme times algorithms. Data-parallel runs add NCCL's own
//    buffers on the GPU, or, where the ranks sum on the host, a pinned
//    staging buffer as large as the largest gradient bucket
//    (all_reduce.h). Out of memory is a DeviceError that says how much
//    was asked for and how much the GPU has free and in total.
//  - Streams: compute, offload (device -> host), prefetch (host -> device)
//    and comm (data-parallel all-reduces) are non-blocking CUDA streams;
//    copies are cudaMemcpyAsync on them.
//    Copies between the arena and the pinned region run asynchronously; a
//    copy from or to pageable host memory follows CUDA's rules for those
//    (it returns once the host side has been read or written), and the
//    driver stages it through pinned buffers of its own: the pageable
//    region (reserve_pageable, HostMemory::pageable) is plain new[] memory
//    the driver finds unregistered. copy_sync queues its copy on the
//    compute stream and waits for it: the ordering cudaMemcpy has on the
//    legacy default stream when compute runs there, as in Zhuang's
//    baseline (our streams are non-blocking, so a bare cudaMemcpy would
//    not be ordered with them).
//  - Events are timing-enabled cudaEvent_t, taken from a pool and given back
//    when the DeviceEvent is destroyed. record/wait/done/synchronize map to
//    cudaEventRecord, cudaStreamWaitEvent, cudaEventQuery and
//    cudaEventSynchronize.
//  - Clock: now_us() is a host steady clock started when the device was
//    created, right after an origin event on the compute stream completed.
//    Every synchronize() records a fresh reference event on the idle
//    compute stream and stamps it with the host time at which it had
//    completed; an event keeps the reference that was current when it was
//    recorded, which therefore precedes it. time_us(e) is that reference's
//    host time plus cudaEventElapsedTime(reference, e), never measured
//    backwards. Measuring from a recent reference keeps the float
//    milliseconds cudaEvent timing gives precise, and the GPU's timer
//    cannot drift away from the host clock over a long run.
//  - submit(stream, work) runs `work` on the calling thread with the
//    stream's kernel table, which enqueues on that stream and returns. So a
//    bad argument throws from submit() itself; a fault inside a running
//    kernel is sticky in CUDA and surfaces as a CudaError from the next
//    synchronising call.
//  - host_task(stream, work) is cudaLaunchHostFunc: the driver runs `work`
//    on its own thread once the stream's earlier work is done, and the
//    stream waits for it. An exception it throws is kept and rethrown by
//    the next synchronize(). The device keeps every task until it has run;
//    after a context error the driver runs none of those still queued,
//    and they are freed with the device.
//  - range_push/range_pop open and close NVTX ranges in the "tidepool"
//    domain, one category per stream, so Nsight Systems shows the layer
//    and tensor names the executor passes; the streams are named too.
//
// Host-side calls are meant to come from one thread (the executor), as for
// the cpu device. Every call that reaches CUDA first makes this device's GPU
// the calling thread's current one (CUDA keeps it per thread), so a thread
// another device or library left on another GPU still works here; the
// current device is left on ours afterwards.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/device/device.h"

namespace tidepool {

class CudaKernels;

struct CudaDeviceOptions {
  int ordinal = 0;  // which GPU (cudaSetDevice)
};

// The number of CUDA devices this process can use; 0 when there is none or
// the runtime cannot talk to a driver, with the reason in *why (e.g. "CUDA
// driver version is insufficient for CUDA runtime version"). Never throws.
int cuda_device_count(std::string* why = nullptr);

// Whether this build sums data-parallel gradients with NCCL (CMake found
// it and TIDEPOOL_NCCL is ON); without it the cuda device sums on the host.
bool cuda_nccl_built();

// What stays free on the GPU after the arena (see reserve_arena): for
// lazily loaded kernel modules and NCCL's buffers, which are allocated after
// it. 256 MiB: NCCL's default buffers for a few peers (4 MiB per channel and
// peer) and module code with room to spare, a third of a percent of an
// 80 GB GPU.
inline constexpr std::size_t kAfterArenaBytes = std::size_t{256} << 20;

class CudaDevice final : public Device {
 public:
  // Throws DeviceError("no CUDA device is available: <reason>") on a machine
  // without a usable GPU, and CudaError if creating streams or handles fails.
  explicit CudaDevice(CudaDeviceOptions options = {});
  // Waits for all queued work, then frees the arena, the pinned region, the
  // handles and the streams.
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DeviceCaps caps() const override;

  std::byte* reserve_arena(std::size_t bytes) override;
  std::byte* reserve_pinned(std::size_t bytes) override;
  std::size_t arena_bytes() const override;
  std::size_t pinned_bytes() const override;
  std::byte* reserve_pageable(std::size_t bytes) override;
  std::size_t pageable_bytes() const override;

  void submit(Stream, std::function<void(Kernels&)> work) override;
  void copy_async(Stream, void* dst, const void* src, std::size_t bytes) override;
  void copy_sync(void* dst, const void* src, std::size_t bytes) override;
  void host_task(Stream, std::function<void()> work) override;
  // Sums `data` over the ranks in the stream's order (engine/device/cuda/
  // all_reduce.h): ncclAllReduce enqueued on the stream where this build
  // has NCCL and every rank has a GPU of its own, which returns at once;
  // otherwise through pinned host memory with comm.all_reduce_sum, which
  // waits for the stream to reach the bucket first. Called on the thread
  // that issues the stream's work; the first call with a Communicator is
  // a collective of its ranks (they choose the way together and start
  // NCCL).
  void all_reduce(Stream, float* data, std::size_t count, Communicator& comm) override;
  void all_reduce(Stream, double* data, std::size_t count, Communicator& comm) override;  // --sync-bn's sums: the same
  // "nccl" or "host": the way all_reduce sums over `comm`; "" before its
  // first all-reduce with it.
  std::string all_reduce_way(const Communicator& comm) const;

  std::unique_ptr<DeviceEvent> record(Stream) override;
  void wait(Stream waiter, const DeviceEvent&) override;
  void synchronize(const DeviceEvent&) override;
  bool done(const DeviceEvent&) override;
  void synchronize() override;
  double elapsed_us(const DeviceEvent& from, const DeviceEvent& to) override;
  double time_us(const DeviceEvent&) override;
  double now_us() const override;

  Kernels& kernels() override;
  // The `p` convolution algorithms chosen by timing on this GPU in this
  // process, and those to use instead of timing (Device).
  std::vector<std::string> kernel_choices() const override;
  void adopt_kernel_choices(const std::vector<std::string>& lines) override;
  // The compute stream's table with its cuda-only queries (algorithm names).
  CudaKernels& cuda_kernels();

  void range_push(Stream, const std::string& name) override;
  void range_pop(Stream) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidepool
