// Passes on the events of the first `count` iterations (and the set-up
// placement, iteration -1) and drops the rest: a whole run's spans would
// make trace files of gigabytes, while a few iterations show everything
// that repeats.
#pragma once

#include <cstdint>

#include "engine/observe/events.h"

namespace tidepool {

class IterationFilter final : public EventSink {
 public:
  IterationFilter(EventSink& next, std::int64_t count) : next_(next), count_(count) {}
  void on_span(const SpanEvent& e) override {
    if (keep(e.iteration)) next_.on_span(e);
  }
  void on_alloc(const AllocEvent& e) override {
    if (keep(e.iteration)) next_.on_alloc(e);
  }
  void on_load(const LoadSample& e) override {
    if (keep(e.iteration)) next_.on_load(e);
  }
  void on_iteration(const IterationSummary& e) override {
    if (keep(e.iteration)) next_.on_iteration(e);
  }
  void flush() override { next_.flush(); }

 private:
  bool keep(std::int64_t iteration) const { return iteration < count_; }
  EventSink& next_;
  std::int64_t count_;
};

}  // namespace tidepool
