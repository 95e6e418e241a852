// The sim device: a GPU in virtual time, from a performance model
// (engine/perf/perf_model.h). It runs schedules through the same executor,
// allocators and events as the real devices and computes no numbers:
//
//  - a kernel call is counted (engine/perf/work.h), not run: each submit
//    takes the model's time for the work it counted on its stream's clock;
//  - a copy takes the link's latency + bytes / bandwidth in its direction
//    and copies nothing; one from or to the pageable region adds the
//    staging buffer's host memcpy (PerfModel::copy_us, kPageableMemcpyGbps);
//  - each stream has a clock in µs; work starts when its stream is free and
//    the host has issued it; wait() moves the waiting stream's clock to the
//    event's time; the host's clock moves only when it synchronises, so an
//    iteration takes what the device would take with a host that issues
//    work instantly (the trainer's own host work is not modelled);
//  - the arena and the pinned region are address space reserved with
//    MAP_NORESERVE: as large as the simulated GPU, and never touched, so a
//    24 GiB arena costs no memory;
//  - what the planner asks (workspaces, saved sizes, layout, 16-bit
//    support) is answered by the simulated device's queries: a GPU
//    profile's (GpuQueries: the cuda device on that GPU, never the host's
//    kernels), or, for a profile measured on the cpu device, the cpu
//    device's, which the caller passes (engine/device/cpu/cpu_queries.h);
//    so a plan on the sim device places exactly what that device would;
//  - it is one of N simulated GPUs on a modelled network (sim_network.h):
//    a gradient all-reduce takes the ring all-reduce's time over the
//    communicator's size on the comm stream's clock and sums nothing. With
//    a SimulatedRanks communicator (engine/comm/simulated_ranks.h) one
//    process simulates rank 0 of N symmetric ranks: every rank runs the same
//    schedule on the same model, so rank 0's timeline is each rank's.
//
// Values read back (the loss, parameters) are zeros: caps().computes_values
// is false and the views say "simulated: no numbers". Host tasks (compression
// of offloaded tensors) are refused: there are no values to compress; and
// so are copies from host threads (copy_sync, CopyEngine::threads): the
// streams are clocks that only the executor moves.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

#include "engine/device/device.h"
#include "engine/device/sim/sim_network.h"
#include "engine/perf/perf_model.h"
#include "engine/perf/work.h"

namespace tidepool {

class SimEvent final : public DeviceEvent {
 public:
  SimEvent(const void* device, double time_us) : device_(device), time_us_(time_us) {}
  const void* device() const { return device_; }
  double time_us() const { return time_us_; }

 private:
  const void* device_;
  double time_us_;
};

class SimDevice final : public Device {
 public:
  // `model`'s profile names the simulated GPU and its memory (0: no limit
  // beyond the host's address space); `network` links it to the other
  // simulated GPUs of a data-parallel run. `queries`: the simulated
  // device's answers; null takes a GPU profile's (GpuQueries over
  // Profile::gpu). A profile measured on the cpu device has no answers of
  // its own: it needs the cpu device's (std::invalid_argument without).
  explicit SimDevice(PerfModel model, SimNetwork network = {}, std::unique_ptr<KernelQueries> queries = nullptr);
  ~SimDevice() override;
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  DeviceCaps caps() const override;
  const PerfModel& model() const { return model_; }
  const PerfModel* perf_model() const override { return &model_; }
  const SimNetwork& network() const { return network_; }

  std::byte* reserve_arena(std::size_t bytes) override;
  std::byte* reserve_pinned(std::size_t bytes) override;
  std::size_t arena_bytes() const override { return arena_.bytes; }
  std::size_t pinned_bytes() const override { return pinned_.bytes; }
  std::byte* reserve_pageable(std::size_t bytes) override;
  std::size_t pageable_bytes() const override { return pageable_.bytes; }

  void submit(Stream, std::function<void(Kernels&)> work) override;
  void copy_async(Stream, void* dst, const void* src, std::size_t bytes) override;
  void copy_sync(void* dst, const void* src, std::size_t bytes) override;
  void host_task(Stream, std::function<void()> work) override;
  // ring_all_reduce_us(count f32, comm.size(), network()) on the stream's
  // clock; `data` is neither read nor written (there are no values).
  void all_reduce(Stream, float* data, std::size_t count, Communicator& comm) override;
  // The same for count f64 (--sync-bn's sums).
  void all_reduce(Stream, double* data, std::size_t count, Communicator& comm) override;

  std::unique_ptr<DeviceEvent> record(Stream) override;
  void wait(Stream waiter, const DeviceEvent&) override;
  void synchronize(const DeviceEvent&) override;
  bool done(const DeviceEvent&) override;
  void synchronize() override;
  double elapsed_us(const DeviceEvent& from, const DeviceEvent& to) override;
  double time_us(const DeviceEvent&) override;
  double now_us() const override { return host_us_; }

  Kernels& kernels() override { return counter_; }

 private:
  struct Mapping {
    std::byte* base = nullptr;
    std::size_t bytes = 0;
  };
  std::byte* reserve(Mapping& m, std::size_t bytes, const char* what);
  double& clock(Stream s) { return clocks_[static_cast<std::size_t>(s)]; }
  // Starts `us` of work on `s` when the stream is free and the host has issued it.
  void run_for(Stream s, double us);
  const SimEvent& own(const DeviceEvent& e) const;
  bool in_arena(const void* p) const;
  bool in_pageable(const void* p) const;

  PerfModel model_;
  SimNetwork network_;
  std::unique_ptr<KernelQueries> queries_;  // the simulated device's answers
  WorkCounter counter_;
  Mapping arena_, pinned_, pageable_;
  std::array<double, kStreamCount> clocks_{};
  double host_us_ = 0;
};

}  // namespace tidepool
