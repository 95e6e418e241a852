// An in-memory sink for a live view: the engine writes events from its
// thread, the UI copies out the recent ones from its own thread each frame.
//
// Each kind of event has its own bounded ring, so a flood of allocations
// cannot push out the iteration summaries. When a ring is full the oldest
// event is overwritten and counted as dropped: a live view wants the
// latest events, and a slow reader must never stall the engine or grow
// memory without bound.
//
// Allocations of the set-up placement (iteration -1: parameters, gradients,
// momenta, placed once per pool) are kept apart, never overwritten: an
// address map needs them however long ago they happened. A new placement
// (set-up allocations arriving after iteration events, as when a re-plan
// gives the parameters a new pool) replaces the old one.
//
// One mutex guards all four rings, so a snapshot is a consistent cut (no
// span without the load sample that was written before it). Writers hold it
// only for one copy. Slots are allocated as events arrive rather than up
// front, so generous capacities cost nothing until they are used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <mutex>
#include <vector>

#include "engine/observe/events.h"

namespace tidepool {

struct RingCapacities {
  std::size_t spans = 1 << 16;
  std::size_t allocs = 1 << 16;
  std::size_t loads = 1 << 16;
  std::size_t iterations = 1 << 12;
};

struct RingSnapshot {
  // The current set-up placement (iteration -1), in order.
  std::vector<AllocEvent> placement;
  // Oldest first.
  std::vector<SpanEvent> spans;
  std::vector<AllocEvent> allocs;
  std::vector<LoadSample> loads;
  std::vector<IterationSummary> iterations;
  // Events overwritten before anyone could copy them, since construction
  // (or the last clear()). A reader that wants to know how many new events
  // arrived compares size + dropped between snapshots.
  std::uint64_t dropped_spans = 0;
  std::uint64_t dropped_allocs = 0;
  std::uint64_t dropped_loads = 0;
  std::uint64_t dropped_iterations = 0;
  // RingSink::version() when the snapshot was taken.
  std::uint64_t version = 0;
};

// A fixed-capacity ring that overwrites its oldest element. Not
// synchronised: RingSink holds the lock. A capacity of 0 keeps nothing and
// counts every push as dropped.
template <typename T>
class Ring {
 public:
  explicit Ring(std::size_t capacity) : capacity_(capacity) {}

  void push(const T& value) {
    if (capacity_ == 0) {
      ++dropped_;
      return;
    }
    if (slots_.size() < capacity_) {
      slots_.push_back(value);
      return;
    }
    slots_[head_] = value;  // overwrite the oldest
    head_ = (head_ + 1) % capacity_;
    ++dropped_;
  }

  // Oldest first.
  std::vector<T> contents() const {
    std::vector<T> out;
    out.reserve(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      out.push_back(slots_[(head_ + i) % slots_.size()]);
    }
    return out;
  }

  void clear() {
    slots_.clear();
    head_ = 0;
    dropped_ = 0;
  }

  std::size_t size() const { return slots_.size(); }
  std::size_t capacity() const { return capacity_; }
  std::uint64_t dropped() const { return dropped_; }

 private:
  std::size_t capacity_;
  std::vector<T> slots_;
  std::size_t head_ = 0;  // index of the oldest element once the ring is full
  std::uint64_t dropped_ = 0;
};

class RingSink final : public EventSink {
 public:
  explicit RingSink(RingCapacities capacities = {});

  void on_span(const SpanEvent&) override;
  void on_alloc(const AllocEvent&) override;
  void on_load(const LoadSample&) override;
  void on_iteration(const IterationSummary&) override;

  // A copy of everything held now; safe from any thread while events arrive.
  RingSnapshot snapshot() const;
  // Empties the rings and resets the drop counts (e.g. when the view resets).
  void clear();
  // Counts every event received and every clear(): a reader that saw the
  // same version has nothing new to copy. Lock-free, so a frame can ask
  // cheaply.
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

  RingCapacities capacities() const { return capacities_; }

 private:
  const RingCapacities capacities_;
  mutable std::mutex mutex_;
  Ring<SpanEvent> spans_;
  Ring<AllocEvent> allocs_;
  Ring<LoadSample> loads_;
  Ring<IterationSummary> iterations_;
  std::vector<AllocEvent> placement_;
  bool placement_complete_ = false;  // an iteration event came after the placement
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace tidepool
