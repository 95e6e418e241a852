// Writes the events of a run as a Chrome trace (the JSON object form,
// {"traceEvents":[...]}), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open directly.
//
// Layout of the trace, all in one process ("tidepool", pid 1):
//  - one track per stream: "compute", "offload (D2H)", "prefetch (H2D)";
//    every span is a complete event ("ph":"X") on its stream's track, named
//    "<layer> fwd" / "<layer> bwd" / "<layer> acc" / "update" for compute
//    and by the tensor moved for transfers, with step, iteration, bytes
//    (and layer/tensor) as args and the span kind as category;
//  - a fourth track, "iterations", with one complete event per iteration
//    (loss, accuracy, peak load and footprint as args), so that iteration
//    boundaries line up above the streams;
//  - a process counter "memory" with series "load" and "extent" (bytes);
//  - optionally (ChromeTraceOptions::allocations) every alloc and free as
//    an instant event on the compute track. Off by default: a deep network
//    makes thousands per iteration and they drown the viewer.
//
// Events are streamed to the file as they arrive; nothing is kept in
// memory. flush() closes the JSON array and the file; the destructor does
// so too if flush() was not called, so an aborted run still leaves a valid
// trace. Events that arrive after flush() are ignored.
//
// Calls may come from any thread; a mutex serialises them.
#pragma once

#include <fstream>
#include <mutex>
#include <string>

#include "engine/observe/events.h"

namespace tidepool {

struct ChromeTraceOptions {
  bool allocations = false;  // write alloc/free instant events
};

class ChromeTraceWriter final : public EventSink {
 public:
  // Opens (truncates) `path` and writes the track names. Throws
  // std::runtime_error naming the path if it cannot be opened.
  explicit ChromeTraceWriter(std::string path, ChromeTraceOptions options = {});
  // Closes the trace if flush() was not called; never throws.
  ~ChromeTraceWriter() override;
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  void on_span(const SpanEvent&) override;
  void on_alloc(const AllocEvent&) override;
  void on_load(const LoadSample&) override;
  void on_iteration(const IterationSummary&) override;
  // Finishes the JSON and closes the file. Throws std::runtime_error naming
  // the path if anything could not be written (e.g. the disk is full).
  void flush() override;

  const std::string& path() const { return path_; }

  // The track ids, exposed for tests and for tools that post-process traces.
  static constexpr int kProcessId = 1;
  static int track_id(Stream s) { return static_cast<int>(s) + 1; }
  static constexpr int kIterationTrackId = kStreamCount + 1;  // after the streams' tracks

 private:
  // Appends one serialised event, with the separator the array needs.
  void write_event(const std::string& json);
  void close();

  const std::string path_;
  const ChromeTraceOptions options_;
  std::mutex mutex_;
  std::ofstream out_;
  bool closed_ = false;
};

}  // namespace tidepool
