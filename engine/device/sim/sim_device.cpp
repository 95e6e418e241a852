#include "engine/device/sim/sim_device.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/comm/communicator.h"
#include "engine/core/bytes_text.h"
#include "engine/device/gpu_queries.h"

namespace tidepool {

namespace {

std::unique_ptr<KernelQueries> answers_for(const Profile& p, std::unique_ptr<KernelQueries> given) {
  if (given) return given;
  if (p.kernels == ProfiledKernels::cuda) return std::make_unique<GpuQueries>(p.gpu);
  throw std::invalid_argument("the profile '" + p.name + "' was measured on the cpu device: the sim device plans it "
                              "with the cpu device's answers, which its caller passes (make_cpu_queries)");
}

}  // namespace

SimDevice::SimDevice(PerfModel model, SimNetwork network, std::unique_ptr<KernelQueries> queries)
    : model_(std::move(model)),
      network_(network),
      queries_(answers_for(model_.profile(), std::move(queries))),
      counter_(*queries_) {
  if (!(network_.gbit_per_s > 0) || !(network_.latency_us >= 0))
    throw std::invalid_argument("a simulated network needs a positive bandwidth and a latency of 0 or more, not " +
                                std::to_string(network_.gbit_per_s) + " Gbit/s and " +
                                std::to_string(network_.latency_us) + " µs");
}

SimDevice::~SimDevice() {
  for (Mapping* m : {&arena_, &pinned_, &pageable_})
    if (m->base) munmap(m->base, m->bytes);
}

DeviceCaps SimDevice::caps() const {
  DeviceCaps c;
  c.name = "sim (" + model_.profile().name + ")";
  c.async_streams = true;
  c.memory_bytes = model_.profile().memory_bytes;
  c.simulated_link = false;  // the link is the profile's
  c.computes_values = false;
  c.host_copies = false;
  return c;
}

std::byte* SimDevice::reserve(Mapping& m, std::size_t bytes, const char* what) {
  if (m.base) throw std::logic_error(std::string("SimDevice: the ") + what + " is reserved twice");
  if (bytes == 0) bytes = 1;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw DeviceError(std::string("the sim device cannot reserve ") + format_bytes(bytes) + " of address space for its " +
                      what + ": " + std::strerror(errno));
  m = {static_cast<std::byte*>(p), bytes};
  return m.base;
}

std::byte* SimDevice::reserve_arena(std::size_t bytes) {
  const std::size_t memory = model_.profile().memory_bytes;
  if (memory != 0 && bytes > memory)
    throw DeviceError("the simulated GPU (" + model_.profile().name + ") has " + format_bytes(memory) +
                      " of memory; the run needs an arena of " + format_bytes(bytes));
  return reserve(arena_, bytes, "arena");
}

std::byte* SimDevice::reserve_pinned(std::size_t bytes) { return reserve(pinned_, bytes, "pinned region"); }

std::byte* SimDevice::reserve_pageable(std::size_t bytes) { return reserve(pageable_, bytes, "pageable region"); }

void SimDevice::run_for(Stream s, double us) {
  double& c = clock(s);
  c = std::max(c, host_us_) + us;
}

void SimDevice::submit(Stream s, std::function<void(Kernels&)> work) {
  counter_.take();
  work(counter_);
  run_for(s, model_.compute_us(counter_.take()));
}

bool SimDevice::in_arena(const void* p) const {
  const auto* b = static_cast<const std::byte*>(p);
  return arena_.base && b >= arena_.base && b < arena_.base + arena_.bytes;
}

bool SimDevice::in_pageable(const void* p) const {
  const auto* b = static_cast<const std::byte*>(p);
  return pageable_.base && b >= pageable_.base && b < pageable_.base + pageable_.bytes;
}

void SimDevice::copy_async(Stream s, void* dst, const void* src, std::size_t bytes) {
  // The direction decides which way of the link the copy takes: into the
  // arena is host → device.
  run_for(s, model_.copy_us(bytes, !in_arena(dst) && in_arena(src), in_pageable(dst) || in_pageable(src)));
}

void SimDevice::copy_sync(void*, const void*, std::size_t) {
  throw DeviceError("the sim device's streams are virtual clocks with no host threads to copy from: run "
                    "--copy-engine threads on the cpu or cuda device");
}

void SimDevice::host_task(Stream, std::function<void()>) {
  throw DeviceError("the sim device computes no values, so there is nothing to compress on the host: "
                    "run without --compress on --device sim");
}

void SimDevice::all_reduce(Stream s, float*, std::size_t count, Communicator& comm) {
  run_for(s, ring_all_reduce_us(count * sizeof(float), comm.size(), network_));
}

void SimDevice::all_reduce(Stream s, double*, std::size_t count, Communicator& comm) {
  run_for(s, ring_all_reduce_us(count * sizeof(double), comm.size(), network_));
}

std::unique_ptr<DeviceEvent> SimDevice::record(Stream s) {
  return std::make_unique<SimEvent>(this, std::max(clock(s), host_us_));
}

const SimEvent& SimDevice::own(const DeviceEvent& e) const {
  const auto* se = dynamic_cast<const SimEvent*>(&e);
  if (!se || se->device() != this) throw std::logic_error("SimDevice: an event of another device");
  return *se;
}

void SimDevice::wait(Stream waiter, const DeviceEvent& e) { clock(waiter) = std::max(clock(waiter), own(e).time_us()); }

void SimDevice::synchronize(const DeviceEvent& e) { host_us_ = std::max(host_us_, own(e).time_us()); }

bool SimDevice::done(const DeviceEvent& e) { return own(e).time_us() <= host_us_; }

void SimDevice::synchronize() {
  for (double c : clocks_) host_us_ = std::max(host_us_, c);
}

double SimDevice::elapsed_us(const DeviceEvent& from, const DeviceEvent& to) {
  return own(to).time_us() - own(from).time_us();
}

double SimDevice::time_us(const DeviceEvent& e) { return own(e).time_us(); }

}  // namespace tidepool
