// What the engine tells the world: every step of a schedule emits events to a
// sink. The UI, the trace and CSV writers and the tests all read the same
// events; nobody reaches into the executor.
//
// Times are microseconds on the device's clock (Device::now_us), which starts
// when the device is created. Offsets are bytes from the start of the arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/device/device.h"
#include "engine/memory/pool_event.h"
#include "engine/core/tensor.h"

namespace tidepool {

// What a span on a stream did.
enum class SpanKind : std::uint8_t {
  forward,
  backward,
  accumulate,  // adding a fan-out tensor's second gradient into its first
  update,      // the optimiser step
  offload,     // device → host copy
  prefetch,    // host → device copy
  compress,    // an offloaded tensor compressed into host memory, on the offload stream
  decompress,  // ... and decompressed for its prefetch, on the prefetch stream
  wait,        // a stream idling on another stream's event (a stall)
  // Data-parallel training (engine/comm/): parameter gradients copied into
  // a bucket (compute), the bucket summed over the ranks (comm), and the
  // average copied back out before the update (compute).
  pack,
  all_reduce,
  unpack,
  recompute,  // a layer's forward kernels again, for backward (StepKind::recompute)
};
const char* to_string(SpanKind k);

struct SpanEvent {
  std::int64_t iteration = 0;
  int step = 0;  // index into the schedule
  Stream stream = Stream::compute;
  SpanKind kind = SpanKind::forward;
  std::string layer;   // layer name, or "" for transfers of input data
  std::string tensor;  // the tensor moved, for transfers
  std::size_t bytes = 0;  // transfers: bytes copied; (de)compression: the compressed bytes
  double start_us = 0, end_us = 0;
  bool operator==(const SpanEvent&) const = default;
};

// What happened to a block of the pool (engine/memory/pool_event.h: placed,
// freed, parked, given back), with the tensor it held.
struct AllocEvent {
  std::int64_t iteration = 0;
  int step = 0;
  PoolAction action = PoolAction::place;
  bool is_free() const { return action != PoolAction::place; }
  int tensor = -1;  // id in the plan's tensor table
  std::string name;
  Role role = Role::activation;
  std::size_t offset = 0;
  std::size_t bytes = 0;  // as placed (rounded up to the allocator's granularity)
  double time_us = 0;
  bool operator==(const AllocEvent&) const = default;
};

// The memory load (bytes of live tensors), the pool extent (one past the
// highest byte in use) and the largest free block below the extent right
// after an allocation event of a step, as the replay loop computed them.
struct LoadSample {
  std::int64_t iteration = 0;
  int step = 0;
  double time_us = 0;
  std::size_t load_bytes = 0;
  std::size_t extent_bytes = 0;
  std::size_t largest_free_bytes = 0;
  bool operator==(const LoadSample&) const = default;
};

// The figures are the pool's (engine/memory/replay.h defines them), as the
// replay loop computed them while the iteration placed its tensors.
struct IterationSummary {
  std::int64_t iteration = 0;
  double start_us = 0, end_us = 0;
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;  // highest extent reached
  int peak_step = -1;               // the step at which the load last reached its peak
  Range largest_free_at_peak;       // the largest free block below the extent then
  float loss = 0;
  float accuracy = 0;  // fraction of the batch classified correctly
  bool operator==(const IterationSummary&) const = default;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_span(const SpanEvent&) {}
  virtual void on_alloc(const AllocEvent&) {}
  virtual void on_load(const LoadSample&) {}
  virtual void on_iteration(const IterationSummary&) {}
  // Called when no more events will come (end of run): writers close files.
  virtual void flush() {}
};

// Forwards every event to several sinks, in order.
class FanOutSink final : public EventSink {
 public:
  void add(EventSink& sink) { sinks_.push_back(&sink); }
  void on_span(const SpanEvent& e) override { for (auto* s : sinks_) s->on_span(e); }
  void on_alloc(const AllocEvent& e) override { for (auto* s : sinks_) s->on_alloc(e); }
  void on_load(const LoadSample& e) override { for (auto* s : sinks_) s->on_load(e); }
  void on_iteration(const IterationSummary& e) override { for (auto* s : sinks_) s->on_iteration(e); }
  void flush() override { for (auto* s : sinks_) s->flush(); }

 private:
  std::vector<EventSink*> sinks_;
};

}  // namespace tidepool
