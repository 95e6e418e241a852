// The folder a `--batch` run leaves behind, and everything that writes it:
//
//   metrics.csv        one row per epoch (appended to when a run resumes)
//   trace.json         Chrome trace of the first traced iterations
//   memory_load.csv    their memory load after every allocation and free
//   events.bin         their every event, for `tidepool view` (engine/observe/event_file.h)
//   checkpoint.bin     the state, written atomically (app/checkpoint.h)
//   summary.json       the run's figures, written atomically at the end
//   timeline.png, address_map.png, memory_load.png   the window's pictures
//
// The epoch loop (app/batch_run.cpp) reports to it; it decides nothing
// about training.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "app/checkpoint.h"
#include "engine/observe/events.h"
#include "engine/observe/sinks/chrome_trace_writer.h"
#include "engine/observe/sinks/event_file_writer.h"
#include "engine/observe/sinks/iteration_filter.h"
#include "engine/observe/sinks/memory_load_csv_writer.h"
#include "engine/observe/sinks/ring_sink.h"
#include "engine/plan/memory_summary.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

struct EpochRow {
  std::int64_t epoch = 0, iteration = 0;  // 1-based epoch; iterations done
  double lr = 0, train_loss = 0, train_accuracy = 0, test_loss = 0, test_accuracy = 0, test_top5 = 0;
  double images_per_second = 0;
  std::size_t peak_load_bytes = 0, footprint_bytes = 0;  // the most any of the epoch's iterations reached
  double seconds = 0;
};

class RunFolder {
 public:
  // Creates the folder, or reopens a resumed run's (its metrics go on).
  RunFolder(std::filesystem::path path, bool resumed, std::int64_t trace_iterations);
  // runs/<model>-<dataset>-<time>
  static std::filesystem::path default_path(const RunSettings& settings);

  const std::filesystem::path& path() const { return path_; }
  // Where the run's events go: those of the traced iterations reach
  // trace.json, memory_load.csv, events.bin and the pictures.
  EventSink& sink() { return filter_; }

  void append_metrics(const EpochRow& row);
  void save_checkpoint(const Checkpoint& checkpoint);
  // The end of the run: the files of events closed, the pictures drawn
  // against the plan's pool (and AutoSwap's load limit), summary.json.
  void finish(const MemorySummary& memory, std::int64_t batch, const nlohmann::json& summary);

 private:
  std::filesystem::path path_;
  ChromeTraceWriter trace_;
  MemoryLoadCsvWriter load_csv_;
  EventFileWriter events_;
  RingSink pictures_;  // the same iterations, drawn as PNG at the end
  FanOutSink files_;
  IterationFilter filter_;
  std::ofstream metrics_;
};

}  // namespace tidepool::app
