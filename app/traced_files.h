// The files of a run's traced iterations, written as the events come:
//
//   trace.json        Chrome trace
//   memory_load.csv   the memory load after every allocation and free
//   events.bin        every event, for `tidepool view` (engine/observe/event_file.h)
//   timeline.png, address_map.png, memory_load.png   drawn when they are done
//
// One writer for both places they go: the run folder's first traced
// iterations (--trace-from, --trace-iterations: app/run_folder.h) and the
// window's captures of later ones (app/capture_recorder.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/observe/any_event.h"
#include "engine/observe/events.h"
#include "engine/observe/sinks/chrome_trace_writer.h"
#include "engine/observe/sinks/event_file_writer.h"
#include "engine/observe/sinks/iteration_filter.h"
#include "engine/observe/sinks/memory_load_csv_writer.h"
#include "engine/observe/sinks/ring_sink.h"
#include "engine/plan/memory_summary.h"

namespace tidepool::app {

// The iterations a run records, by the events' numbers (from 0):
// [from, from + count) (--trace-from, --trace-iterations).
struct TraceWindow {
  std::int64_t from = 0, count = 0;
  std::int64_t end() const { return from + count; }
};

// A traced file's name for a rank: "trace.json" for rank 0,
// "trace.rank2.json" for rank 2.
std::string ranked_file(const char* stem, const char* extension, int rank);

// Events kept in order, to be sent on later (the events of a run's start
// before its folder is open; the set-up placement a capture begins with).
class KeptEvents {
 public:
  template <class E>
  void add(const E& e) {
    events_.emplace_back(e);
  }
  void send_to(EventSink& sink) const;
  void clear() { events_.clear(); }

 private:
  std::vector<AnyEvent> events_;
};

class TracedFiles {
 public:
  // Opens the files in `folder` (which must exist) for the iterations of
  // `window` and the set-up placements (IterationFilter), named for `rank`.
  TracedFiles(const std::filesystem::path& folder, TraceWindow window, int rank);
  // Where the events go.
  EventSink& sink() { return filter_; }
  // The iterations are done: the files closed and, on rank 0, the pictures
  // drawn against the plan's pool (and AutoSwap's load limit). Once; later
  // calls do nothing. `computes_values`: the device's (the sim's losses
  // and accuracies are no numbers, and the memory load says so).
  void close(const MemorySummary& memory, std::int64_t batch, bool computes_values);
  bool closed() const { return closed_; }

 private:
  std::filesystem::path folder_;
  int rank_ = 0;
  ChromeTraceWriter trace_;
  MemoryLoadCsvWriter load_csv_;
  EventFileWriter events_;
  RingSink pictures_;  // the same iterations, drawn as PNG when they are done
  FanOutSink files_;
  IterationFilter filter_;
  bool closed_ = false;
};

}  // namespace tidepool::app
