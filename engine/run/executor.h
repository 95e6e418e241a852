// The executor runs a schedule on a device. It is the only code that touches
// streams and events: compute steps are submitted to the compute stream,
// transfers to the offload/prefetch streams, parameters are copied in and
// out here, and every byte comes from the device pool's offsets in the
// arena (engine/memory/device_pool.h). At the end of an iteration it waits
// for the device, reads the event times and reports spans, allocations and
// load samples to the sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/core/network.h"
#include "engine/device/device.h"
#include "engine/memory/device_pool.h"
#include "engine/observe/events.h"
#include "engine/schedule/schedule.h"
#include "engine/run/copy_threads.h"
#include "engine/step_calls/layer_args.h"
#include "engine/run/zero_value_store.h"

namespace tidepool {

// Where each tensor of a schedule is: its arena offset while it is placed,
// for tensors that come from or go to host memory a host address, and its
// residency — on the device, on the host (offloaded, its block given up),
// or in flight between them — as the host has issued it.
struct Placement {
  std::vector<std::size_t> offset;
  std::vector<bool> placed;
  std::vector<void*> host;
  std::vector<Residency> residency;
  void resize(std::size_t tensors) {
    if (offset.size() < tensors) {
      offset.resize(tensors, 0);
      placed.resize(tensors, false);
      host.resize(tensors, nullptr);
      residency.resize(tensors, Residency::device);
    }
  }
};

struct IterationInputs {
  std::int64_t iteration = 0;
  const float* images = nullptr;         // host memory, the schedule's data shape
  const std::int32_t* labels = nullptr;  // host memory, [batch]
  std::uint64_t seed = 0;                // dropout masks derive from it
  SgdOptions sgd;
  // fp16 (Schedule::overflow): the loss's gradient is multiplied by it
  // before backward, and the parameter gradients divided by it before the
  // update (engine/run/loss_scaler.h). A power of two.
  float loss_scale = 1.0f;
};

struct IterationResult {
  float loss = 0;
  std::int64_t correct = 0;       // top-1
  std::int64_t correct_top5 = 0;
  // fp16: a parameter gradient was NaN or ±inf at the iteration's loss
  // scale, so the update was skipped (the parameters are as they were).
  bool skipped = false;
  PoolStats pool;       // the pool's state after the iteration
  PoolFigures memory;   // the iteration's peak load, footprint and largest free block at the peak
  double start_us = 0, end_us = 0;
  // Compressed offloads: the bytes offloaded this iteration, what they took
  // on the host compressed, and what the store holds for them (with its
  // chunks' slack).
  std::size_t compressed_from_bytes = 0, compressed_to_bytes = 0;
  std::size_t compressed_held_bytes = 0;
};

class Executor {
 public:
  // `arena` is what device.reserve_arena() returned, at least as large as
  // any pool; `pinned` is host memory for offloaded tensors, at least the
  // largest Schedule::pinned_bytes run (from device.reserve_pageable() when
  // the schedules say HostMemory::pageable), and `readback` pinned memory for
  // the loss each iteration reads back (MemoryPlan::readback_pinned_bytes),
  // both from device.reserve_pinned(). The sink may be null.
  // `compress_threads` host threads (the calling stream's included)
  // compress and decompress each offloaded tensor (MemorySettings::compress).
  Executor(Device& device, const Network& network, std::byte* arena, std::span<std::byte> pinned,
           std::span<std::byte> readback, EventSink* sink, int compress_threads = 1);

  // A fresh pool of `pool_bytes` under `heuristic`, with the schedule's
  // persistent tensors (parameters, gradients, momenta) placed in it. Call
  // before the first run and whenever the pool changes; what the
  // persistent tensors held is gone (read it first). Throws DeviceError
  // when the pool cannot hold them.
  void use_pool(std::string_view heuristic, std::size_t pool_bytes, const Schedule& schedule);

  // Runs one iteration and waits for it to finish.
  IterationResult run(const Schedule& schedule, const IterationInputs& inputs);

  // Persistent tensors from and to host memory, one after another in the
  // order of `ids` (f32 values).
  std::vector<float> read(const Schedule& schedule, std::span<const int> ids);
  // The same into `out`, which holds exactly their values (a buffer kept
  // by the caller: no allocation, no fresh pages).
  void read(const Schedule& schedule, std::span<const int> ids, std::span<float> out);
  void write(const Schedule& schedule, std::span<const int> ids, std::span<const float> values);

  const Placement& placement() const { return placement_; }
  const DevicePool& pool() const { return *pool_; }
  void set_sink(EventSink* sink) { sink_ = sink; }
  // The ranks a data-parallel schedule's buckets are all-reduced over
  // (Schedule::buckets); not owned. Null: one rank, and a schedule with
  // buckets is refused.
  void set_communicator(Communicator* comm) { comm_ = comm; }

 private:
  struct Pending;  // events of one iteration, resolved when it ends
  std::byte* device_address(int tensor) const;
  // Runs `submit` (work for `stream`) between two recorded events and keeps
  // them as a span of the iteration; the compute stream's end is where the
  // next transfer starts from. Returns the end.
  std::shared_ptr<DeviceEvent> span(Pending& pending, Stream stream, SpanEvent e, const std::function<void()>& submit,
                                    int stored = -1);
  void place(const Schedule& s, int tensor, int step, bool will_offload, Pending& pending);
  void release(const Schedule& s, int tensor, int step, bool after_copy, Pending& pending);
  void compute(const Schedule& s, const Step& st, int step, const IterationInputs& in, Pending& pending);
  void sync_statistics(LayerCall call, const SpanEvent& e, Pending& pending);
  void accumulate(const Schedule& s, const Step& st, int step, Pending& pending);
  void update(const Schedule& s, const IterationInputs& in, int step, Pending& pending);
  void transfer(const Schedule& s, const Step& st, int step, Pending& pending);
  void all_reduce(const Schedule& s, const Step& st, int step, Pending& pending);
  void wait_all_reduce(const Schedule& s, const Step& st, int step, Pending& pending);
  void wait_transfer(const Schedule& s, const Step& st, int step, Pending& pending);
  // CopyEngine::threads: the host waits for a copy thread's copy of `t`,
  // the compute stream idle meanwhile (a wait span on its lane).
  void wait_copy(const CopyThreads::Copy& copy, int t, const Schedule& s, int step, Pending& pending);
  void report(const Schedule& s, std::int64_t iteration, Pending& pending, IterationResult& result);

  Device& device_;
  const Network& network_;
  EventSink* sink_;
  std::byte* arena_;
  std::byte* pinned_;
  std::size_t pinned_bytes_;
  std::span<std::byte> readback_;
  std::unique_ptr<DevicePool> pool_;
  Placement placement_;
  // Compressed offloads (MemorySettings::compress), kept across iterations
  // so their chunks are allocated once.
  ZeroValueStore store_;
  // CopyEngine::threads' host threads, started when a schedule first asks.
  std::unique_ptr<CopyThreads> copies_;
  Communicator* comm_ = nullptr;
};

}  // namespace tidepool
