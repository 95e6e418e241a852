#include "engine/device/cuda/cuda_device.h"

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/device/cuda/all_reduce.h"
#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {

namespace {

using namespace cuda;

// Timing-enabled events, recycled: the executor records a few hundred per
// iteration, and an event handle costs a driver call to make and destroy.
// Handed back while still pending is fine: a re-record replaces the old
// one, and waits already enqueued on it keep the old point.
class EventPool {
 public:
  EventPool() = default;
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  ~EventPool() {
    for (cudaEvent_t e : free_) (void)cudaEventDestroy(e);
  }

  cudaEvent_t take() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        cudaEvent_t e = free_.back();
        free_.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    TP_CALL(cudaEventCreateWithFlags, &e, cudaEventDefault);
    return e;
  }

  void give(cudaEvent_t e) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      free_.push_back(e);
    } catch (...) {
      (void)cudaEventDestroy(e);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

// A point on the compute stream whose host time is known: recorded, waited
// for, and stamped with the host clock the moment it had completed. Every
// event recorded after that moment completes after it, so its time is the
// reference's plus a non-negative cudaEventElapsedTime (see the header).
struct ClockReference {
  explicit ClockReference(std::shared_ptr<EventPool> p) : pool(std::move(p)), event(pool->take()) {}
  ~ClockReference() { pool->give(event); }
  ClockReference(const ClockReference&) = delete;
  ClockReference& operator=(const ClockReference&) = delete;

  std::shared_ptr<EventPool> pool;
  cudaEvent_t event;
  double host_us = 0;
};

// An event: one cudaEvent_t recorded on one stream of one device, with the
// clock reference that was current when it was recorded. It keeps the pool
// alive, so it may outlive the device that recorded it.
class CudaEvent final : public DeviceEvent {
 public:
  CudaEvent(const void* device, Stream stream, std::shared_ptr<EventPool> pool,
            std::shared_ptr<const ClockReference> since)
      : device_(device),
        stream_(stream),
        pool_(std::move(pool)),
        event_(pool_->take()),
        since_(std::move(since)) {}
  ~CudaEvent() override { pool_->give(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  const void* device() const { return device_; }
  Stream stream() const { return stream_; }
  cudaEvent_t get() const { return event_; }
  const ClockReference& since() const { return *since_; }

 private:
  const void* device_;
  Stream stream_;
  std::shared_ptr<EventPool> pool_;
  cudaEvent_t event_;
  std::shared_ptr<const ClockReference> since_;
};

// Colours per stream in Nsight's NVTX rows, matching the trace's tracks:
// compute, offload (D2H), prefetch (H2D), comm (all-reduce).
constexpr std::array<std::uint32_t, kStreamCount> kRangeColours = {0xFF4C72B0u, 0xFFDD8452u,
                                                                   0xFF55A868u, 0xFF8172B2u};

struct PinnedFree {
  void operator()(void* p) const noexcept { (void)cudaFreeHost(p); }
};

}  // namespace

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // leave no error behind for the next caller
    if (why) *why = cudaGetErrorString(status);
    return 0;
  }
  if (count == 0 && why) *why = "the CUDA runtime found no GPU";
  return count;
}

namespace {

struct HostErrors {
  std::mutex mutex;
  std::exception_ptr first;
};

// What cudaLaunchHostFunc runs: the task, from the driver's thread, once
// everything before it on the stream is done. The stream waits for it.
// The device owns every task, not the driver: after a context error (a
// faulting kernel) the driver never calls the functions still queued, and
// a task that freed itself when it ran would leak with all it captured.
struct HostTask {
  HostTask(std::function<void()> w, std::shared_ptr<HostErrors> e)
      : work(std::move(w)), errors(std::move(e)) {}
  std::function<void()> work;
  std::shared_ptr<HostErrors> errors;
  std::atomic<bool> ran{false};  // the driver is done with it: the device may free it

  static void CUDART_CB run(void* data) {
    auto* task = static_cast<HostTask*>(data);
    try {
      task->work();
    } catch (...) {
      std::lock_guard<std::mutex> lock(task->errors->mutex);
      if (!task->errors->first) task->errors->first = std::current_exception();
    }
    task->ran.store(true, std::memory_order_release);  // the last touch
  }
};

}  // namespace

struct CudaDevice::Impl {
  int ordinal = 0;
  std::string name;
  std::size_t total_memory = 0;

  // Declared first, destroyed last: everything below enqueues on them.
  std::array<StreamHandle, kStreamCount> streams;
  std::shared_ptr<EventPool> events = std::make_shared<EventPool>();
  std::shared_ptr<Shared> shared;
  // One table per stream; compute's is made with the device (the planner
  // queries it), the transfer streams' only if work is ever submitted there.
  std::array<std::unique_ptr<CudaKernels>, kStreamCount> tables;

  DeviceBuffer arena;
  std::unique_ptr<void, PinnedFree> pinned;
  std::size_t pinned_bytes = 0;
  // Ordinary host memory: what cudaMemcpyAsync stages through the driver's
  // own pinned buffers.
  std::unique_ptr<std::byte[]> pageable;
  std::size_t pageable_bytes = 0;

  // Data-parallel sums (all_reduce.h): made with the device, which knows
  // its GPU's UUID; NCCL's communicators and the host way's staging
  // buffer come with the first all-reduce that needs them.
  std::unique_ptr<CudaAllReduce> sums;

  // The clock: host steady time since `epoch`, and the latest reference
  // event, which every event recorded from now on keeps (see the header).
  std::chrono::steady_clock::time_point epoch;
  mutable std::mutex clock_mutex;
  std::shared_ptr<const ClockReference> reference;

  Unique<nvtxDomainHandle_t, nvtxDomainDestroy> nvtx;

  // Host tasks queued and not yet seen to have run (see HostTask): pruned
  // as new ones come, cleared once the streams are idle, and freed with the
  // device after its streams are drained, whether or not they ever ran.
  std::vector<std::unique_ptr<HostTask>> host_tasks;
  // The first exception a host task threw, rethrown by the next
  // synchronize().
  std::shared_ptr<HostErrors> host_errors = std::make_shared<HostErrors>();
  void rethrow_host_error() const {
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> lock(host_errors->mutex);
      std::swap(e, host_errors->first);
    }
    if (e) std::rethrow_exception(e);
  }

  cudaStream_t stream(Stream s) const {
    const auto i = static_cast<int>(s);
    if (i < 0 || i >= kStreamCount) {
      throw std::invalid_argument("cuda device: no stream " + std::to_string(i));
    }
    return streams[static_cast<std::size_t>(i)].get();
  }

  // Several host threads may drive several devices, and CUDA's current
  // device is per thread: every entry point that calls CUDA starts here
  // (see bind_device), device 0 included.
  void bind() const { bind_device(ordinal); }

  double host_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - epoch)
        .count();
  }
};

CudaDevice::CudaDevice(CudaDeviceOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) throw DeviceError("no CUDA device is available: " + why);
  if (options.ordinal < 0 || options.ordinal >= count) {
    throw DeviceError("cuda device " + std::to_string(options.ordinal) + " does not exist (" +
                      std::to_string(count) + " GPU" + (count == 1 ? "" : "s") + " visible)");
  }
  d.ordinal = options.ordinal;
  d.bind();
  // A GPU that others have filled: said here with the figures, rather than
  // by whichever stream, launch or handle below fails first, in its words.
  std::size_t free_bytes = 0, total_bytes = 0;
  TP_CALL(cudaMemGetInfo, &free_bytes, &total_bytes);
  if (free_bytes < kLibraryStartBytes) throw_out_of_memory(kLibraryStartBytes, "the device's streams, kernels and library handles");
  cudaDeviceProp props{};
  TP_CALL(cudaGetDeviceProperties, &props, d.ordinal);
  d.name = "cuda:" + std::to_string(d.ordinal) + " (" + props.name + ")";
  d.total_memory = props.totalGlobalMem;
  d.sums = std::make_unique<CudaAllReduce>(gpu_identity(props.uuid));
  if (const cudaError_t probe = probe_kernel_image(); probe != cudaSuccess) {
    if (probe == cudaErrorNoKernelImageForDevice || probe == cudaErrorInvalidDeviceFunction ||
        probe == cudaErrorUnsupportedPtxVersion)
      throw DeviceError("cuda device: " + std::string(props.name) + " is compute capability " +
                        std::to_string(props.major) + "." + std::to_string(props.minor) +
                        " and this build has no code it can run (built for " TIDEPOOL_CUDA_ARCHITECTURES
                        "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
                        std::to_string(props.major * 10 + props.minor) + " (" + cudaGetErrorName(probe) + ")");
    check(probe, "the first kernel launch");
  }

  // Non-blocking: our streams never serialise with the legacy default
  // stream, which libraries or a profiler might touch.
  for (std::size_t i = 0; i < d.streams.size(); ++i) {
    cudaStream_t s = nullptr;
    TP_CALL(cudaStreamCreateWithFlags, &s, cudaStreamNonBlocking);
    d.streams[i].reset(s);
  }

  d.nvtx.reset(nvtxDomainCreateA("tidepool"));
  for (int i = 0; i < kStreamCount; ++i) {
    const char* stream_name = to_string(static_cast<Stream>(i));
    nvtxDomainNameCategoryA(d.nvtx.get(), static_cast<std::uint32_t>(i + 1), stream_name);
    nvtxNameCudaStreamA(d.streams[static_cast<std::size_t>(i)].get(),
                        (std::string("tidepool ") + stream_name).c_str());
  }

  const std::size_t compute = static_cast<std::size_t>(Stream::compute);
  d.shared = std::make_shared<Shared>(d.ordinal, d.streams[compute].get());
  d.tables[compute] =
      std::make_unique<CudaKernels>(std::make_unique<Context>(d.shared, d.streams[compute].get()));

  // The clock's origin: an event on the compute stream, and the host clock
  // started the moment it has completed.
  auto origin = std::make_shared<ClockReference>(d.events);
  TP_CALL(cudaEventRecord, origin->event, d.streams[compute].get());
  TP_CALL(cudaEventSynchronize, origin->event);
  d.epoch = std::chrono::steady_clock::now();
  origin->host_us = 0;
  d.reference = std::move(origin);
}

CudaDevice::~CudaDevice() {
  // Queued work may still read the arena or the pinned region; let it
  // finish before they are freed. Errors no longer matter here. The
  // handles and buffers are freed on our GPU's context.
  (void)cudaSetDevice(impl_->ordinal);
  for (auto& s : impl_->streams) {
    if (s) (void)cudaStreamSynchronize(s.get());
  }
  (void)cudaGetLastError();
}

DeviceCaps CudaDevice::caps() const {
  DeviceCaps c;
  c.name = impl_->name;
  c.async_streams = true;
  c.memory_bytes = impl_->total_memory;
  c.times_kernels = true;
  return c;
}

std::byte* CudaDevice::reserve_arena(std::size_t bytes) {
  Impl& d = *impl_;
  if (d.arena.get()) {
    throw DeviceError("cuda device: the arena is already reserved (" + format_bytes(d.arena.size()) +
                      "); it can be reserved only once");
  }
  if (bytes == 0)
    throw DeviceError("cuda device: cannot reserve an empty arena (0 bytes requested)");
  d.bind();
  // Whatever else the run allocates on the GPU comes before the arena: every
  // stream's kernel table (the transfer streams' otherwise appear at their
  // first submit; their cuBLAS workspaces alone are 32 MiB each on Hopper),
  // and kAfterArenaBytes stays free for what is allocated lazily later
  // (modules loaded at a kernel's first launch, NCCL's buffers). Without
  // this a budget near the GPU's free memory failed at the first
  // iteration with a launch error rather than here with the figures.
  for (std::size_t i = 0; i < d.tables.size(); ++i) {
    if (!d.tables[i])
      d.tables[i] = std::make_unique<CudaKernels>(std::make_unique<Context>(d.shared, d.streams[i].get()));
  }
  std::size_t free_bytes = 0, total_bytes = 0;
  TP_CALL(cudaMemGetInfo, &free_bytes, &total_bytes);
  if (free_bytes < kAfterArenaBytes || bytes > free_bytes - kAfterArenaBytes)
    throw DeviceError("cuda device: out of device memory reserving " + format_bytes(bytes) + " (" +
                      std::to_string(bytes) + " bytes) for the arena: " + format_bytes(free_bytes) + " free of " +
                      format_bytes(total_bytes) + " on this GPU, and " + format_bytes(kAfterArenaBytes) +
                      " of it must stay free for what the libraries allocate later; try a smaller --batch-size "
                      "or --budget, or an offload --mode");
  // From here on every byte a step touches comes from the arena, so the
  // `p` scheme stops measuring with buffers of its own.
  d.arena = DeviceBuffer(bytes, "the arena");
  d.shared->may_measure = false;
  return d.arena.bytes();
}

std::byte* CudaDevice::reserve_pinned(std::size_t bytes) {
  Impl& d = *impl_;
  if (d.pinned) {
    throw DeviceError("cuda device: the pinned region is already reserved (" + format_bytes(d.pinned_bytes) +
                      "); it can be reserved only once");
  }
  if (bytes == 0) {
    throw DeviceError("cuda device: cannot reserve an empty pinned region (0 bytes requested)");
  }
  d.bind();
  void* p = nullptr;
  const cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw DeviceError("cuda device: cannot pin " + format_bytes(bytes) + " (" + std::to_string(bytes) +
                      " bytes) of host memory for the pinned region; offload less (another "
                      "--mode) or free host memory");
  }
  check(status, "cudaHostAlloc");
  d.pinned.reset(p);
  d.pinned_bytes = bytes;
  return static_cast<std::byte*>(p);
}

std::byte* CudaDevice::reserve_pageable(std::size_t bytes) {
  Impl& d = *impl_;
  if (d.pageable) {
    throw DeviceError("cuda device: the pageable region is already reserved (" + format_bytes(d.pageable_bytes) +
                      "); it can be reserved only once");
  }
  if (bytes == 0) throw DeviceError("cuda device: cannot reserve an empty pageable region (0 bytes requested)");
  // new[], not cudaHostAlloc: memory the driver has not pinned is the point.
  d.pageable.reset(new (std::nothrow) std::byte[bytes]);
  if (!d.pageable)
    throw DeviceError("cuda device: out of host memory reserving " + format_bytes(bytes) + " for the pageable region");
  d.pageable_bytes = bytes;
  return d.pageable.get();
}

std::size_t CudaDevice::arena_bytes() const { return impl_->arena.size(); }
std::size_t CudaDevice::pinned_bytes() const { return impl_->pinned_bytes; }
std::size_t CudaDevice::pageable_bytes() const { return impl_->pageable_bytes; }

Kernels& CudaDevice::kernels() { return cuda_kernels(); }

std::vector<std::string> CudaDevice::kernel_choices() const { return impl_->shared->plans.recorded(); }

void CudaDevice::adopt_kernel_choices(const std::vector<std::string>& lines) { impl_->shared->plans.adopt(lines); }

CudaKernels& CudaDevice::cuda_kernels() {
  // The table's own queries bind too (they may come from another thread);
  // this leaves a caller that goes on to enqueue through it on our GPU.
  impl_->bind();
  return *impl_->tables[static_cast<std::size_t>(Stream::compute)];
}

void CudaDevice::submit(Stream s, std::function<void(Kernels&)> work) {
  if (!work) throw std::invalid_argument("cuda device: submit() of an empty function");
  Impl& d = *impl_;
  cudaStream_t stream = d.stream(s);
  d.bind();
  std::unique_ptr<CudaKernels>& table = d.tables[static_cast<std::size_t>(s)];
  if (!table) table = std::make_unique<CudaKernels>(std::make_unique<Context>(d.shared, stream));
  work(*table);
}

void CudaDevice::copy_async(Stream s, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst == nullptr || src == nullptr) {
    throw std::invalid_argument("cuda device: copy_async of " + std::to_string(bytes) +
                                " bytes with a null pointer");
  }
  impl_->bind();
  // cudaMemcpyDefault: unified addressing tells device, pinned and
  // pageable pointers apart, so one call serves both directions.
  TP_CALL(cudaMemcpyAsync, dst, src, bytes, cudaMemcpyDefault, impl_->stream(s));
}

void CudaDevice::copy_sync(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst == nullptr || src == nullptr)
    throw std::invalid_argument("cuda device: copy_sync of " + std::to_string(bytes) + " bytes with a null pointer");
  // Called from a copy thread: the device must be current on it too.
  impl_->bind();
  cudaStream_t compute = impl_->stream(Stream::compute);
  cudaEvent_t raw = nullptr;
  TP_CALL(cudaEventCreateWithFlags, &raw, cudaEventDisableTiming);
  const EventHandle done(raw);
  TP_CALL(cudaMemcpyAsync, dst, src, bytes, cudaMemcpyDefault, compute);
  TP_CALL(cudaEventRecord, done.get(), compute);
  TP_CALL(cudaEventSynchronize, done.get());
}

void CudaDevice::host_task(Stream s, std::function<void()> work) {
  if (!work) throw std::invalid_argument("cuda device: host_task() of an empty function");
  Impl& d = *impl_;
  cudaStream_t stream = d.stream(s);
  d.bind();
  std::erase_if(d.host_tasks, [](const auto& t) { return t->ran.load(std::memory_order_acquire); });
  d.host_tasks.push_back(std::make_unique<HostTask>(std::move(work), d.host_errors));
  const cudaError_t status = cudaLaunchHostFunc(stream, &HostTask::run, d.host_tasks.back().get());
  if (status != cudaSuccess) d.host_tasks.pop_back();  // never queued
  check(status, "cudaLaunchHostFunc");
}

namespace {

void refuse_null(const void* data, std::size_t count, const char* what) {
  if (data == nullptr && count > 0)
    throw std::invalid_argument("cuda device: all_reduce of " + std::to_string(count) + " " + what +
                                " at a null pointer");
}

}  // namespace

void CudaDevice::all_reduce(Stream s, float* data, std::size_t count, Communicator& comm) {
  refuse_null(data, count, "floats");
  impl_->bind();
  impl_->sums->run(impl_->stream(s), data, count, comm);
}

void CudaDevice::all_reduce(Stream s, double* data, std::size_t count, Communicator& comm) {
  refuse_null(data, count, "doubles");
  impl_->bind();
  impl_->sums->run(impl_->stream(s), data, count, comm);
}

std::string CudaDevice::all_reduce_way(const Communicator& comm) const { return impl_->sums->way(comm); }

bool cuda_nccl_built() { return nccl_built(); }

namespace {

const CudaEvent& own_event(const void* device, const DeviceEvent& e) {
  const auto* ce = dynamic_cast<const CudaEvent*>(&e);
  if (ce == nullptr || ce->device() != device) {
    throw std::invalid_argument("cuda device: the event was not recorded on this device");
  }
  return *ce;
}

}  // namespace

std::unique_ptr<DeviceEvent> CudaDevice::record(Stream s) {
  cudaStream_t stream = impl_->stream(s);
  impl_->bind();
  std::shared_ptr<const ClockReference> since;
  {
    std::lock_guard<std::mutex> lock(impl_->clock_mutex);
    since = impl_->reference;
  }
  auto e = std::make_unique<CudaEvent>(this, s, impl_->events, std::move(since));
  TP_CALL(cudaEventRecord, e->get(), stream);
  return e;
}

void CudaDevice::wait(Stream waiter, const DeviceEvent& e) {
  const CudaEvent& ev = own_event(this, e);
  // A stream already runs its own work in order.
  if (ev.stream() == waiter) return;
  impl_->bind();
  TP_CALL(cudaStreamWaitEvent, impl_->stream(waiter), ev.get(), 0);
}

void CudaDevice::synchronize(const DeviceEvent& e) {
  impl_->bind();
  TP_CALL(cudaEventSynchronize, own_event(this, e).get());
  impl_->rethrow_host_error();
}

bool CudaDevice::done(const DeviceEvent& e) {
  impl_->bind();
  const cudaError_t status = cudaEventQuery(own_event(this, e).get());
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) {
    // "Not yet" is an answer, not an error: clear it so that the next
    // launch check does not take it for a failed launch.
    (void)cudaGetLastError();
    return false;
  }
  check(status, "cudaEventQuery");
  return false;
}

void CudaDevice::synchronize() {
  Impl& d = *impl_;
  d.bind();
  for (auto& s : d.streams) TP_CALL(cudaStreamSynchronize, s.get());
  d.host_tasks.clear();  // a stream waits for its host tasks: all have run
  d.rethrow_host_error();
  // Everything is idle: a good moment for a new clock reference (see the
  // header), so that events recorded from now on are measured from close
  // by. Those recorded before keep the reference they were recorded after.
  auto next = std::make_shared<ClockReference>(d.events);
  TP_CALL(cudaEventRecord, next->event, d.stream(Stream::compute));
  TP_CALL(cudaEventSynchronize, next->event);
  next->host_us = d.host_us();
  std::lock_guard<std::mutex> lock(d.clock_mutex);
  d.reference = std::move(next);
}

namespace {

// Milliseconds from `from` to `to`; waits for `to` when it has not completed
// yet. The executor reads every span's events once an iteration is over,
// when they are all complete, so the common path is one driver call.
float elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  cudaError_t status = cudaEventElapsedTime(&ms, from, to);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();  // "not yet" is not an error
    TP_CALL(cudaEventSynchronize, to);
    TP_CALL(cudaEventSynchronize, from);
    status = cudaEventElapsedTime(&ms, from, to);
  }
  check(status, "cudaEventElapsedTime");
  return ms;
}

}  // namespace

double CudaDevice::time_us(const DeviceEvent& e) {
  const CudaEvent& ev = own_event(this, e);
  impl_->bind();
  // The reference completed before the event was recorded, so the elapsed
  // time is never negative (cudaEventElapsedTime does not promise to
  // measure backwards).
  const ClockReference& since = ev.since();
  return since.host_us + 1000.0 * static_cast<double>(elapsed_ms(since.event, ev.get()));
}

double CudaDevice::elapsed_us(const DeviceEvent& from, const DeviceEvent& to) {
  const CudaEvent& a = own_event(this, from);
  const CudaEvent& b = own_event(this, to);
  impl_->bind();
  return 1000.0 * static_cast<double>(elapsed_ms(a.get(), b.get()));
}

double CudaDevice::now_us() const { return impl_->host_us(); }

void CudaDevice::range_push(Stream s, const std::string& name) {
  const auto i = static_cast<std::size_t>(s);
  if (i >= kRangeColours.size()) return;
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<std::uint32_t>(i + 1);
  a.colorType = NVTX_COLOR_ARGB;
  a.color = kRangeColours[i];
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name.c_str();
  nvtxDomainRangePushEx(impl_->nvtx.get(), &a);
}

void CudaDevice::range_pop(Stream) { nvtxDomainRangePop(impl_->nvtx.get()); }

}  // namespace tidepool
