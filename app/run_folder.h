// The folder a `--batch` run (or a window session saved with --out) leaves
// behind, and everything that writes it:
//
//   metrics.csv        one row per epoch, written when the epoch ends (and at the run's end)
//   trace.json         Chrome trace of the first traced iterations
//   memory_load.csv    their memory load after every allocation and free
//   events.bin         their every event, for `tidepool view` (engine/observe/event_file.h)
//   checkpoint.bin     the state, written atomically and durably (app/checkpoint.h)
//   summary.json       the run's figures, written atomically at the end
//   profile.json       the performance profile the run planned or simulated with, if any
//                      (engine/perf/profile.h: `--profile`, the sim device's, or --tune's measurement)
//   timeline.png, address_map.png, memory_load.png   the window's pictures of the traced iterations
//
// Resuming reopens the folder as the checkpoint left it:
//  - metrics.csv keeps the rows of the epochs the checkpoint completed and
//    loses any written after it (a kill between an epoch's row and its
//    checkpoint), so the resumed run writes each later row exactly once;
//  - the traced files belong to the invocation that trains the traced
//    iterations: a checkpoint at or past them leaves the files alone, one
//    before them (a kill or --stop-after inside them) writes them anew from
//    the checkpoint's iteration on. They are closed, and the pictures drawn,
//    as soon as the traced iterations are done, so a later kill leaves them
//    whole;
//  - a checkpoint.bin.tmp or summary.json.tmp a kill left behind is removed.
//
// A data-parallel run (app/ranks.h) shares one folder: rank 0 writes all
// of the above, every other rank only its own traced files, named with
// its rank (trace.rank1.json, memory_load.rank1.csv, events.rank1.bin).
// On machines without a shared file system each keeps its own folder of
// the same path, and rank 0's is the run's.
//
// A run's record (app/run_record.h, for the --batch epoch loop and the
// window's runner alike) reports to it; it decides nothing about training.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/checkpoint.h"
#include "app/traced_files.h"
#include "engine/observe/events.h"
#include "engine/plan/memory_summary.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

struct EpochRow {
  std::int64_t epoch = 0, iteration = 0;  // 1-based epoch; iterations done
  double lr = 0, train_loss = 0, train_accuracy = 0, test_loss = 0, test_accuracy = 0, test_top5 = 0;
  double images_per_second = 0;
  std::size_t peak_load_bytes = 0, footprint_bytes = 0;  // the most any of the epoch's iterations reached
  double seconds = 0;
  bool numbers = true;  // false (sim): the losses and accuracies are empty cells
};

class RunFolder {
 public:
  // Names the folder, or a resumed run's at `resumed` (see above), and
  // checks it may be written: a folder that holds a run is refused unless
  // it is the one resumed or `replace` (--force) is given, a folder of other
  // files always, each with a std::invalid_argument naming the way out.
  // Nothing is created or written until open(), so a start refused before
  // then leaves the disk as it was. `rank`: which rank of a data-parallel
  // run writes through it (0: the run's files; others: their traced files
  // only, and the rest are no-ops).
  // `resumed_from`: the folder the checkpoint was read from (--resume).
  RunFolder(std::filesystem::path path, const Checkpoint* resumed, const std::filesystem::path& resumed_from,
            TraceWindow traced, int rank = 0, bool replace = false);
  ~RunFolder();
  // Every check has passed: creates the folder (emptying the run it held
  // under `replace`), opens its files and writes the events sink() held.
  void open();
  // runs/<model>-<dataset>-<time>
  static std::filesystem::path default_path(const RunSettings& settings);

  const std::filesystem::path& path() const { return path_; }
  // Where the run's events go: those of the traced iterations reach
  // trace.json, memory_load.csv, events.bin and the pictures (before
  // open(), they wait in memory). Null when this invocation traces nothing
  // (resumed past the traced iterations).
  EventSink* sink();

  void append_metrics(const EpochRow& row);
  void save_checkpoint(const Checkpoint& checkpoint);
  // The traced iterations are done: their files closed, the pictures drawn
  // against the plan's pool (and AutoSwap's load limit). Once; later calls
  // do nothing. `computes_values`: the device's (the sim's losses and
  // accuracies are no numbers, and the memory load says so).
  void close_traced(const MemorySummary& memory, std::int64_t batch, bool computes_values);
  // The end of the run: close_traced() if not done yet, summary.json.
  void finish(const MemorySummary& memory, std::int64_t batch, bool computes_values, const nlohmann::json& summary);

 private:
  class StartBuffer;   // events before open()
  std::filesystem::path path_;
  int rank_ = 0;
  bool replace_ = false;
  TraceWindow traced_window_;
  std::int64_t resumed_epoch_ = -1;  // the checkpoint's epoch; -1 for a new run
  bool traces_ = false;
  bool opened_ = false;
  std::unique_ptr<StartBuffer> start_;
  std::unique_ptr<TracedFiles> traced_;
  std::ofstream metrics_;
};

}  // namespace tidepool::app
