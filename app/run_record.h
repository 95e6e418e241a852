// What a training run writes to its run folder (app/run_folder.h) as it
// trains, one writer for both ways of training: `tidepool --batch`'s epoch
// loop (app/batch_run.cpp) and the window's session with --out
// (app/session_runner.cpp). The caller trains and evaluates; this adds the
// iterations up and decides nothing about training:
//
//   RunRecord record(settings, resume, comm);   // the folder's checks: writes nothing
//   session.start(record.sink());               // (and restore a resumed run)
//   record.open(session);                       // every check has passed
//   loop: r = session.train_iteration();
//         record.add(session, r);               // its figures; the traced files closed when done
//         if (an epoch ended, or the run) record.save(session, epoch, r, &evaluation);   // the row, the checkpoint
//         else if (record.checkpoint_due(session)) record.save(session, epoch, r, nullptr);
//   summary = record.finish(session);           // a checkpoint at a stop; summary.json
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/capture_recorder.h"
#include "app/checkpoint.h"
#include "app/run_folder.h"
#include "app/run_summary.h"
#include "app/session.h"
#include "engine/comm/communicator.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

// RunSettings::checkpoint_every == kCheckpointByTime: the time between checkpoints.
inline constexpr double kCheckpointSeconds = 300;

// What the iterations of the current epoch added up to; a run resumed
// mid-epoch starts from what the checkpoint says its first part added up to.
struct EpochTally {
  EpochSoFar sum;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  void add(const StepReport& r);
  double rate() const { return sum.train_seconds > 0 ? sum.images / sum.train_seconds : 0.0; }
  double mean_loss() const { return sum.images ? sum.loss_sum / sum.images : 0.0; }
  double accuracy() const { return sum.images ? static_cast<double>(sum.correct) / sum.images : 0.0; }
  EpochSoFar so_far() const;
};

class RunRecord {
 public:
  // Names the folder (--out, or runs/<model>-<dataset>-<time>, under
  // mpirun rank 0's name on every rank) and checks that it may be written
  // (RunFolder: a folder holding another run is refused naming --resume
  // and --force); writes nothing. `resume`: the checkpoint the run
  // continues (--resume), whose settings summary.json compares with the
  // run's. `started`: when the invocation began (summary.json's wall time).
  RunRecord(const RunSettings& settings, const Checkpoint* resume, Communicator* comm = nullptr,
            std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now());

  const std::filesystem::path& path() const { return folder_.path(); }
  // Where the session's events go: the run folder's traced files
  // (RunFolder::sink) and the captures'.
  EventSink* sink() { return &events_; }

  // A resumed run that has trained all it is asked to: nothing to do, and
  // nothing changes (true; the caller says so). One asked for fewer
  // iterations than it has trained is refused (std::invalid_argument): a
  // run is continued, never cut back.
  bool nothing_to_do(const TrainingSession& session) const;

  // Every check has passed (the session started, a resumed one restored):
  // the folder is created and opened on every rank, and the profile the
  // run plans with is written into it.
  void open(TrainingSession& session);

  // One trained iteration: its figures added up; the traced files closed,
  // and their pictures drawn, when the traced iterations are done.
  void add(TrainingSession& session, const StepReport& r);
  // Whether a checkpoint is due between epoch ends: every
  // --checkpoint-every iterations, or 5 minutes after the last one. Every
  // rank calls it (under the time rule any rank's clock decides).
  bool checkpoint_due(TrainingSession& session);
  // After add(): with `eval` (an epoch, or the run, ended and the
  // parameters as they are now were evaluated), the metrics row of epoch
  // `epoch` (0-based, as it was when the iteration began); then the
  // checkpoint.
  void save(TrainingSession& session, std::int64_t epoch, const StepReport& r, const Evaluation* eval);
  // The epoch so far: images/s, mean training loss and accuracy.
  const EpochTally& tally() const { return tally_; }

  // The window's "record the next `count` iterations" (app/capture_recorder.h),
  // after open(): from the session's next iteration, at most to the run's
  // last. Returns their folder. Throws std::invalid_argument with the reason
  // for the user (one is recording, nothing is left to train, the folder
  // exists).
  std::filesystem::path capture(const TrainingSession& session, std::int64_t count);
  // The capture finished since the last call (by add(), or finish() at the
  // run's end), once; nothing otherwise.
  std::optional<std::filesystem::path> take_captured();

  // The end of this invocation: a checkpoint where the last iteration has
  // none (a stop between checkpoints), an evaluation where the parameters
  // as they are have none, and summary.json: status `diverged`, `stopped`
  // (short of the planned iterations: resumable) or `done`. Every rank
  // calls it. Returns the summary.
  nlohmann::json finish(TrainingSession& session, const nlohmann::json& tuned = nullptr);

 private:
  void checkpoint(TrainingSession& session);
  // Finishes the capture recording now, with the run's figures so far.
  void finish_capture(TrainingSession& session);
  nlohmann::json resumed_with() const;
  RunSettings settings_;             // as the invocation started
  std::optional<Checkpoint> resume_;  // without its state
  Communicator* comm_ = nullptr;
  std::chrono::steady_clock::time_point started_;
  RunFolder folder_;
  CaptureRecorder captures_;
  FanOutSink events_;  // folder_'s sink, then captures_
  std::optional<std::filesystem::path> captured_;
  EpochTally tally_;
  RunTotals totals_;
  bool evaluated_ = false;  // totals_.last_eval is of the parameters as they are now
  std::int64_t checkpointed_at_ = -1;  // the iteration of the last checkpoint (or the one resumed)
  std::chrono::steady_clock::time_point last_checkpoint_;
};

}  // namespace tidepool::app
