// Passes on the events of `count` iterations from iteration `from` (and the
// set-up placement, iteration -1) and drops the rest: a whole run's spans
// would make trace files of gigabytes, while a few iterations show
// everything that repeats (--trace-iterations, --trace-from).
#pragma once

#include <cstdint>

#include "engine/observe/events.h"

namespace tidepool {

class IterationFilter final : public EventSink {
 public:
  // Iterations [from, from + count), by the events' numbers (from 0), and
  // the set-up before the first iteration (negative numbers: the blocks
  // placed for the run, such as the parameters, which every later
  // iteration's address map shows).
  IterationFilter(EventSink& next, std::int64_t count, std::int64_t from = 0)
      : next_(next), from_(from), count_(count) {}
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
  bool keep(std::int64_t iteration) const {
    return iteration < 0 || (iteration >= from_ && iteration - from_ < count_);
  }
  EventSink& next_;
  std::int64_t from_, count_;
};

}  // namespace tidepool
