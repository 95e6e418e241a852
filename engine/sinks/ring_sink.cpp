#include "engine/sinks/ring_sink.h"

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
}

void RingSink::on_alloc(const AllocEvent& e) {
  std::lock_guard lock(mutex_);
  allocs_.push(e);
}

void RingSink::on_load(const LoadSample& e) {
  std::lock_guard lock(mutex_);
  loads_.push(e);
}

void RingSink::on_iteration(const IterationSummary& e) {
  std::lock_guard lock(mutex_);
  iterations_.push(e);
}

RingSnapshot RingSink::snapshot() const {
  RingSnapshot s;
  std::lock_guard lock(mutex_);
  s.spans = spans_.contents();
  s.allocs = allocs_.contents();
  s.loads = loads_.contents();
  s.iterations = iterations_.contents();
  s.dropped_spans = spans_.dropped();
  s.dropped_allocs = allocs_.dropped();
  s.dropped_loads = loads_.dropped();
  s.dropped_iterations = iterations_.dropped();
  return s;
}

void RingSink::clear() {
  std::lock_guard lock(mutex_);
  spans_.clear();
  allocs_.clear();
  loads_.clear();
  iterations_.clear();
}

}  // namespace tidepool
