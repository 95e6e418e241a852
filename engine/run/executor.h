// The executor runs a schedule on a device. It is the only code that touches
// streams and events: compute steps are submitted to the compute stream,
// transfers to the offload/prefetch streams, and every byte comes from the
// allocator's offsets in the arena. At the end of an iteration it waits for
// the device, reads the event times and reports spans, allocations and load
// samples to the sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/device/device.h"
#include "engine/observe/events.h"
#include "engine/core/network.h"
#include "engine/plan/schedule.h"
#include "engine/run/zero_value_store.h"

namespace tidepool {

struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
};

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
};

struct IterationResult {
  float loss = 0;
  std::int64_t correct = 0;       // top-1
  std::int64_t correct_top5 = 0;
  PoolStats pool;                      // the allocator's state after the iteration
  std::size_t peak_load_bytes = 0;     // highest memory load seen during this iteration
  std::size_t footprint_bytes = 0;     // highest pool extent seen during this iteration
  double start_us = 0, end_us = 0;
  // Compressed offloads: the bytes offloaded this iteration, what they took
  // on the host compressed, and what the store holds for them (with its
  // chunks' slack).
  std::size_t compressed_from_bytes = 0, compressed_to_bytes = 0;
  std::size_t compressed_held_bytes = 0;
};

class Executor {
 public:
  // `arena` is what device.reserve_arena() returned, at least as large as the
  // allocator's pool; `pinned` is host memory for offloaded tensors, at
  // least the largest Schedule::pinned_bytes run. The sink may be null.
  // `compress_threads` host threads (the calling stream's included)
  // compress and decompress each offloaded tensor (PlanSettings::compress).
  Executor(Device& device, std::byte* arena, std::span<std::byte> pinned, const Network& network,
           Allocator& allocator, EventSink* sink, int compress_threads = 1);

  // Places the schedule's persistent tensors (parameters, gradients,
  // momenta). Call once, before the first run; throws DeviceError when the
  // pool cannot hold them.
  void place_persistent(const Schedule& schedule, Placement& placement);

  // Runs one iteration and waits for it to finish.
  IterationResult run(const Schedule& schedule, Placement& placement, const IterationInputs& inputs);

  std::byte* device_address(const Placement& p, int tensor) const;
  void set_sink(EventSink* sink) { sink_ = sink; }

 private:
  struct Pending;  // events of one iteration, resolved when it ends
  std::size_t place(const Schedule& s, Placement& p, int tensor, int step, Pending& pending,
                    bool will_offload);
  void release(const Schedule& s, Placement& p, int tensor, bool after_copy, int step, Pending& pending);
  // Makes the compute stream wait for offloads still reading a block that
  // was just handed out again (async semantics).
  void wait_for_fences(std::size_t offset, std::size_t bytes, int step, Pending& pending);
  // Events for the parked blocks the last placement or park gave back.
  void report_given_back(const Schedule& s, int step, Pending& pending);
  void compute(const Schedule& s, Placement& p, const Step& st, int step,
               const IterationInputs& in, Pending& pending);
  void update(const Schedule& s, const Placement& p, const SgdOptions& sgd, int step, Pending& pending);
  void transfer(const Schedule& s, Placement& p, const Step& st, int step, Pending& pending);
  void wait_transfer(const Schedule& s, Placement& p, const Step& st, int step, Pending& pending);
  void report(const Schedule& s, std::int64_t iteration, Pending& pending, IterationResult& result);

  Device& device_;
  const Network& network_;
  Allocator& allocator_;
  EventSink* sink_;
  std::byte* arena_;
  std::byte* pinned_;
  std::size_t pinned_bytes_;
  // Compressed offloads (PlanSettings::compress), kept across iterations so
  // their chunks are allocated once.
  ZeroValueStore store_;
};

}  // namespace tidepool
