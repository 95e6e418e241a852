// An EventSink that keeps every event it is sent, by kind and in order, for
// tests that check what a run reported.
#pragma once

#include <variant>
#include <vector>

#include "engine/observe/any_event.h"
#include "engine/observe/events.h"

namespace tidepool::testing {

using RecordedEvent = AnyEvent;

class Recorder final : public EventSink {
 public:
  void on_span(const SpanEvent& e) override {
    spans.push_back(e);
    events.emplace_back(e);
  }
  void on_alloc(const AllocEvent& e) override {
    allocs.push_back(e);
    events.emplace_back(e);
  }
  void on_load(const LoadSample& e) override {
    loads.push_back(e);
    events.emplace_back(e);
  }
  void on_iteration(const IterationSummary& e) override {
    iterations.push_back(e);
    events.emplace_back(e);
  }

  // Each kind by itself, in the order it came...
  std::vector<SpanEvent> spans;
  std::vector<AllocEvent> allocs;
  std::vector<LoadSample> loads;
  std::vector<IterationSummary> iterations;
  // ... and all of them together, in the order they came.
  std::vector<RecordedEvent> events;
};

}  // namespace tidepool::testing
