#include "engine/observe/sinks/ring_sink.h"

namespace tidepool {

RingSink::RingSink(RingCapacities capacities)
    : capacities_(capacities),
      spans_(capacities.spans),
      allocs_(capacities.allocs),
      loads_(capacities.loads),
      iterations_(capacities.iterations) {}

void RingSink::on_span(const SpanEvent& e) {
  std::lock_guard lock(mutex_);
  spans_.push(e);
  if (e.iteration >= 0) placement_complete_ = true;
  version_.fetch_add(1, std::memory_order_release);
}

void RingSink::on_alloc(const AllocEvent& e) {
  std::lock_guard lock(mutex_);
  if (e.iteration < 0) {
    if (placement_complete_) placement_.clear();  // a new pool, a new placement
    placement_complete_ = false;
    placement_.push_back(e);
  } else {
    placement_complete_ = true;
    allocs_.push(e);
  }
  version_.fetch_add(1, std::memory_order_release);
}

void RingSink::on_load(const LoadSample& e) {
  std::lock_guard lock(mutex_);
  loads_.push(e);
  version_.fetch_add(1, std::memory_order_release);
}

void RingSink::on_iteration(const IterationSummary& e) {
  std::lock_guard lock(mutex_);
  iterations_.push(e);
  placement_complete_ = true;
  version_.fetch_add(1, std::memory_order_release);
}

RingSnapshot RingSink::snapshot() const {
  RingSnapshot s;
  std::lock_guard lock(mutex_);
  s.placement = placement_;
  s.spans = spans_.contents();
  s.allocs = allocs_.contents();
  s.loads = loads_.contents();
  s.iterations = iterations_.contents();
  s.dropped_spans = spans_.dropped();
  s.dropped_allocs = allocs_.dropped();
  s.dropped_loads = loads_.dropped();
  s.dropped_iterations = iterations_.dropped();
  s.version = version_.load(std::memory_order_relaxed);
  return s;
}

void RingSink::clear() {
  std::lock_guard lock(mutex_);
  spans_.clear();
  allocs_.clear();
  loads_.clear();
  iterations_.clear();
  placement_.clear();
  placement_complete_ = false;
  version_.fetch_add(1, std::memory_order_release);
}

}  // namespace tidepool
