#include "engine/device/cpu/cpu_device.h"

#include "engine/device/cpu/denormals.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "engine/device/cpu/cpu_kernels.h"

namespace tidepool {

namespace {

// Cache-line alignment: what oneDNN prefers for its buffers, and enough for
// any vector load the kernels do. Offsets the allocators hand out are
// aligned relative to this base.
constexpr std::size_t kHostAlignment = 64;

std::string mib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

void CpuDevice::FreeDeleter::operator()(std::byte* p) const noexcept { std::free(p); }

CpuDevice::CpuDevice(CpuDeviceOptions options)
    : options_(options), epoch_(std::chrono::steady_clock::now()) {
  set_link_gbps(options_.link_gbps);
  kernels_ = std::make_unique<CpuKernels>();
  for (int i = 0; i < kStreamCount; ++i) {
    streams_[static_cast<std::size_t>(i)] =
        std::make_unique<WorkerStream>(to_string(static_cast<Stream>(i)), options_.worker_nice);
  }
}

void CpuDevice::set_link_gbps(double gbps) {
  if (!(gbps >= 0) || !std::isfinite(gbps)) {
    throw DeviceError("cpu device: link bandwidth must be a finite number of GB/s >= 0 (0 = "
                      "unthrottled), got " + std::to_string(gbps));
  }
  options_.link_gbps = gbps;
}

CpuDevice::~CpuDevice() {
  // Shut every stream down before any is destroyed: a queued wait on one
  // stream may still be blocked on another stream's counter, and each
  // shut_down lets its own queue run dry first, so the others progress.
  for (auto& s : streams_) {
    if (s) s->shut_down();
  }
}

DeviceCaps CpuDevice::caps() const {
  DeviceCaps c;
  c.name = "cpu";
  c.async_streams = true;
  c.memory_bytes = 0;
  c.simulated_link = true;
  c.host_copies = true;
  return c;
}

std::byte* CpuDevice::reserve(HostBlock& block, std::size_t bytes, const char* what) {
  if (block.memory) {
    throw DeviceError(std::string("cpu device: the ") + what + " is already reserved (" +
                      mib(block.bytes) + "); it can be reserved only once");
  }
  if (bytes == 0) {
    throw DeviceError(std::string("cpu device: cannot reserve an empty ") + what +
                      " (0 bytes requested)");
  }
  // aligned_alloc wants a multiple of the alignment; the slack is never
  // handed out, since arena_bytes() reports what was asked for.
  if (bytes > std::numeric_limits<std::size_t>::max() - kHostAlignment) {
    throw DeviceError(std::string("cpu device: cannot reserve ") + mib(bytes) + " for the " +
                      what + ": the size is too large");
  }
  const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kHostAlignment, rounded));
  if (p == nullptr) {
    throw DeviceError(std::string("cpu device: out of host memory reserving ") + mib(bytes) +
                      " for the " + what);
  }
  block.memory.reset(p);
  block.bytes = bytes;
  return p;
}

std::byte* CpuDevice::reserve_arena(std::size_t bytes) { return reserve(arena_, bytes, "arena"); }

std::byte* CpuDevice::reserve_pinned(std::size_t bytes) {
  return reserve(pinned_, bytes, "pinned region");
}

std::byte* CpuDevice::reserve_pageable(std::size_t bytes) {
  std::byte* region = reserve(pageable_, bytes, "pageable region");
  for (HostBlock& b : staging_) reserve(b, kPageableStagingBytes, "pageable staging buffer");
  return region;
}

bool CpuDevice::in_pageable(const void* p) const {
  const auto* b = static_cast<const std::byte*>(p);
  const std::byte* base = pageable_.memory.get();
  return base != nullptr && b >= base && b < base + pageable_.bytes;
}

WorkerStream& CpuDevice::stream(Stream s) {
  const auto i = static_cast<int>(s);
  if (i < 0 || i >= kStreamCount) {
    throw std::invalid_argument("cpu device: no stream " + std::to_string(i));
  }
  return *streams_[static_cast<std::size_t>(i)];
}

const CpuEvent& CpuDevice::own_event(const DeviceEvent& e) const {
  const auto* ce = dynamic_cast<const CpuEvent*>(&e);
  if (ce == nullptr || ce->device() != this) {
    throw std::invalid_argument("cpu device: the event was not recorded on this device");
  }
  return *ce;
}

void CpuDevice::rethrow_stream_error() {
  // Take every stream's error, not just the first, so that all streams go
  // back to running work once the host has been told.
  std::exception_ptr first;
  for (auto& s : streams_) {
    std::exception_ptr e = s->take_error();
    if (e && !first) first = std::move(e);
  }
  if (first) std::rethrow_exception(first);
}

void CpuDevice::submit(Stream s, std::function<void(Kernels&)> work) {
  if (!work) throw std::invalid_argument("cpu device: submit() of an empty function");
  rethrow_stream_error();
  Kernels* k = kernels_.get();
  stream(s).enqueue([k, work = std::move(work)] {
    static thread_local const bool flushing = (flush_denormals_on_this_thread(), true);
    (void)flushing;
    work(*k);
  });
}

void CpuDevice::host_task(Stream s, std::function<void()> work) {
  if (!work) throw std::invalid_argument("cpu device: host_task() of an empty function");
  rethrow_stream_error();
  stream(s).enqueue(std::move(work));  // the stream's worker is a host thread
}

namespace {

// Moves `bytes` and takes at least as long as the link would (gbps > 0);
// the time memmove itself took counts towards it.
void link_copy(void* dst, const void* src, std::size_t bytes, double gbps) {
  const auto start = std::chrono::steady_clock::now();
  // memmove, not memcpy: a copy inside the arena may overlap, and the
  // cost is the same when it does not.
  if (bytes > 0) std::memmove(dst, src, bytes);
  if (gbps > 0) {
    const std::chrono::duration<double> link_time(static_cast<double>(bytes) / (gbps * 1e9));
    std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(link_time));
  }
}

}  // namespace

std::function<void()> CpuDevice::copy_task(Stream s, void* dst, const void* src, std::size_t bytes) {
  const double gbps = options_.link_gbps;
  const bool to_pageable = in_pageable(dst), from_pageable = in_pageable(src);
  if (!to_pageable && !from_pageable) return [dst, src, bytes, gbps] { link_copy(dst, src, bytes, gbps); };
  if (to_pageable && from_pageable)
    throw std::invalid_argument("cpu device: a copy from pageable host memory to pageable host memory is the "
                                "host's memcpy, not a device copy");
  if (static_cast<std::size_t>(s) >= staging_.size())
    throw std::logic_error(std::string("cpu device: the ") + to_string(s) + " stream has no staging buffer for pageable memory");
  std::byte* staging = staging_[static_cast<std::size_t>(s)].memory.get();
  std::atomic<std::uint64_t>* staged = &staged_bytes_;
  // As the driver does: the link hop between the device and the pinned
  // buffer, and the host's memcpy between the buffer and pageable memory,
  // a buffer at a time.
  return [dst, src, bytes, gbps, staging, staged, to_pageable] {
    auto* d = static_cast<std::byte*>(dst);
    const auto* from = static_cast<const std::byte*>(src);
    for (std::size_t done = 0; done < bytes; done += kPageableStagingBytes) {
      const std::size_t n = std::min(kPageableStagingBytes, bytes - done);
      if (to_pageable) {  // device → staging over the link, then staging → pageable
        link_copy(staging, from + done, n, gbps);
        std::memcpy(d + done, staging, n);
      } else {  // pageable → staging, then staging → device over the link
        std::memcpy(staging, from + done, n);
        link_copy(d + done, staging, n, gbps);
      }
    }
    staged->fetch_add(bytes, std::memory_order_relaxed);
  };
}

void CpuDevice::copy_async(Stream s, void* dst, const void* src, std::size_t bytes) {
  if (bytes > 0 && (dst == nullptr || src == nullptr)) {
    throw std::invalid_argument("cpu device: copy_async of " + std::to_string(bytes) +
                                " bytes with a null pointer");
  }
  rethrow_stream_error();
  stream(s).enqueue(copy_task(s, dst, src, bytes));
}

void CpuDevice::copy_sync(void* dst, const void* src, std::size_t bytes) {
  if (bytes > 0 && (dst == nullptr || src == nullptr)) {
    throw std::invalid_argument("cpu device: copy_sync of " + std::to_string(bytes) + " bytes with a null pointer");
  }
  // Not rethrow_stream_error(): that hands a stream's failure to whoever
  // calls first, and it belongs to the executor. A copy skipped because
  // the compute stream failed says so; the executor hears the cause.
  auto ran = std::make_shared<std::atomic<bool>>(false);
  WorkerStream& compute = stream(Stream::compute);
  const std::uint64_t seq = compute.enqueue([copy = copy_task(Stream::compute, dst, src, bytes), ran] {
    copy();
    ran->store(true, std::memory_order_release);
  });
  compute.wait_for(seq);
  if (!ran->load(std::memory_order_acquire))
    throw DeviceError("cpu device: a synchronous copy of " + std::to_string(bytes) +
                      " bytes was skipped: work queued on the compute stream before it failed");
}

std::unique_ptr<DeviceEvent> CpuDevice::record(Stream s) {
  rethrow_stream_error();
  auto stamp = std::make_shared<CpuEvent::Stamp>();
  const auto epoch = epoch_;
  // A control task: events complete even while the stream skips work after
  // a failure, so waiters on other streams and the host never hang.
  const std::uint64_t seq = stream(s).enqueue(
      [stamp, epoch] {
        stamp->time_us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - epoch)
                .count();
      },
      TaskKind::control);
  return std::make_unique<CpuEvent>(this, s, seq, std::move(stamp));
}

void CpuDevice::wait(Stream waiter, const DeviceEvent& e) {
  const CpuEvent& ev = own_event(e);
  rethrow_stream_error();
  // A stream already runs its own tasks in order.
  if (ev.stream() == waiter) return;
  WorkerStream* target = &stream(ev.stream());
  const std::uint64_t seq = ev.sequence();
  // A control task, so the ordering holds even if the waiter stream is
  // skipping work when it reaches the wait and the host clears the error
  // before the next task.
  stream(waiter).enqueue([target, seq] { target->wait_for(seq); }, TaskKind::control);
}

void CpuDevice::synchronize(const DeviceEvent& e) {
  const CpuEvent& ev = own_event(e);
  stream(ev.stream()).wait_for(ev.sequence());
  rethrow_stream_error();
}

bool CpuDevice::done(const DeviceEvent& e) {
  const CpuEvent& ev = own_event(e);
  rethrow_stream_error();
  return stream(ev.stream()).reached(ev.sequence());
}

void CpuDevice::synchronize() {
  // Only the host queues work, and it is here, so draining the streams one
  // after another leaves all three empty.
  for (auto& s : streams_) s->drain();
  rethrow_stream_error();
}

double CpuDevice::time_us(const DeviceEvent& e) {
  const CpuEvent& ev = own_event(e);
  // reached() takes the stream's lock; together with the worker taking it
  // to count the marker as completed, that orders the stamp's write before
  // this read.
  if (!stream(ev.stream()).reached(ev.sequence())) synchronize(e);
  return ev.stamped_us();
}

double CpuDevice::elapsed_us(const DeviceEvent& from, const DeviceEvent& to) {
  return time_us(to) - time_us(from);
}

double CpuDevice::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - epoch_)
      .count();
}

Kernels& CpuDevice::kernels() { return *kernels_; }

}  // namespace tidepool
