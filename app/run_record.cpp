#include "app/run_record.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "engine/perf/profile.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The run folder: --out, or a new one named by the time; under mpirun
// every rank names it as rank 0 does (its time stamp).
fs::path run_folder_path(const RunSettings& s, Communicator* comm) {
  fs::path path = s.out.empty() ? RunFolder::default_path(s) : fs::path(s.out);
  if (comm && s.out.empty()) {
    std::string text = path.string();
    std::int64_t length = static_cast<std::int64_t>(text.size());
    comm->broadcast(&length, sizeof length, 0);
    text.resize(static_cast<std::size_t>(length));
    comm->broadcast(text.data(), text.size(), 0);
    path = text;
  }
  return path;
}

// What earlier invocations of a resumed run recorded of the settings their
// resumes changed: its summary.json's "resumed_with", where it has one.
nlohmann::json earlier_changes(const std::string& folder) {
  std::ifstream in(fs::path(folder) / "summary.json");
  if (!in) return nullptr;
  const nlohmann::json summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return summary.is_object() && summary.contains("resumed_with") ? summary["resumed_with"] : nlohmann::json();
}

std::optional<Checkpoint> without_state(const Checkpoint* c) {
  if (!c) return std::nullopt;
  Checkpoint kept;
  kept.settings = c->settings;
  kept.epoch = c->epoch;
  kept.batch_in_epoch = c->batch_in_epoch;
  kept.iteration = c->iteration;
  kept.epoch_so_far = c->epoch_so_far;
  kept.loss_scale = c->loss_scale;
  return kept;
}

}  // namespace

void EpochTally::add(const StepReport& r) {
  sum.train_seconds += r.seconds;
  sum.images += r.images;
  sum.correct += r.result.correct;
  sum.loss_sum += static_cast<double>(r.result.loss) * r.images;
  sum.peak_load_bytes = std::max<std::uint64_t>(sum.peak_load_bytes, r.result.memory.peak_load_bytes);
  sum.footprint_bytes = std::max<std::uint64_t>(sum.footprint_bytes, r.result.memory.footprint_bytes);
}

EpochSoFar EpochTally::so_far() const {
  EpochSoFar e = sum;
  e.wall_seconds += seconds_since(start);
  return e;
}

RunRecord::RunRecord(const RunSettings& settings, const Checkpoint* resume, Communicator* comm,
                     Clock::time_point started)
    : settings_(settings),
      resume_(without_state(resume)),
      comm_(comm),
      started_(started),
      folder_(run_folder_path(settings, comm), resume, settings.resume, {settings.trace_from, settings.trace_iterations},
              comm ? comm->rank() : 0, settings.force),
      captures_(folder_.path()),
      last_checkpoint_(Clock::now()) {
  if (resume && resume->batch_in_epoch > 0) tally_.sum = resume->epoch_so_far;
  if (EventSink* traced = folder_.sink()) events_.add(*traced);
  events_.add(captures_);
}

bool RunRecord::nothing_to_do(const TrainingSession& session) const {
  if (!resume_) return false;
  const std::string& folder = settings_.resume;
  const std::int64_t done = resume_->iteration, planned = session.total_iterations();
  if (done > planned)
    throw std::invalid_argument("the run in " + folder + " has trained " + std::to_string(done) +
                                " iterations, more than the " + std::to_string(planned) +
                                " asked for: a run is continued, never cut back (give --iterations " +
                                std::to_string(done) + " or more, or leave it out)");
  return done == planned;
}

void RunRecord::open(TrainingSession& session) {
  // Rank 0 first: under --force it empties the folder the other ranks then
  // write their traced files into (the broadcast is the barrier).
  const int rank = session.rank();
  if (rank == 0) folder_.open();
  if (comm_) {
    int opened = 1;
    comm_->broadcast(&opened, sizeof opened, 0);
  }
  if (rank != 0) folder_.open();
  // The profile travels with the run: `--device sim --profile RUN/profile.json` replays it anywhere.
  if (const PerfModel* model = session.trainer().model())
    save_profile(model->profile(), (folder_.path() / "profile.json").string());
  checkpointed_at_ = session.iteration();
  last_checkpoint_ = Clock::now();
}

void RunRecord::add(TrainingSession& session, const StepReport& r) {
  tally_.add(r);
  totals_.peak_seen = std::max<std::size_t>(totals_.peak_seen, r.result.memory.peak_load_bytes);
  totals_.train_seconds += r.seconds;
  totals_.train_images += r.images;
  evaluated_ = false;
  if (r.result.compressed_from_bytes) totals_.last_compressed = r.result;
  if (session.iteration() == settings_.trace_from + settings_.trace_iterations)
    folder_.close_traced(session.trainer().memory().summary(), settings_.batch_size,
                         session.device().caps().computes_values);
  if (captures_.recording() && session.iteration() >= captures_.end()) finish_capture(session);
}

fs::path RunRecord::capture(const TrainingSession& session, std::int64_t count) {
  const std::int64_t left = session.total_iterations() - session.iteration();
  if (left <= 0) throw std::invalid_argument("the run has trained all its iterations: there are none left to record");
  return captures_.start(session.iteration(), std::min(count, left));
}

std::optional<fs::path> RunRecord::take_captured() {
  std::optional<fs::path> done;
  done.swap(captured_);
  return done;
}

void RunRecord::finish_capture(TrainingSession& session) {
  RunTotals now = totals_;
  now.wall_seconds = seconds_since(started_);
  captured_ = captures_.finish(session.trainer().memory().summary(), settings_.batch_size,
                               session.device().caps().computes_values,
                               run_summary(session, now, comm_, nullptr, resumed_with()));
}

nlohmann::json RunRecord::resumed_with() const {
  // As resumed (`settings_`): dyn mode rewrites the session's mode as it chooses.
  return resume_ ? resumed_changes(*resume_, settings_, earlier_changes(settings_.resume)) : nlohmann::json();
}

bool RunRecord::checkpoint_due(TrainingSession& session) {
  const std::int64_t every = settings_.checkpoint_every;
  bool due = every > 0 ? session.iteration() % every == 0
                       : every == kCheckpointByTime && seconds_since(last_checkpoint_) >= kCheckpointSeconds;
  // Each rank has its own clock: they checkpoint together when any says so.
  if (comm_ && every == kCheckpointByTime) due = comm_->all_reduce_max(due ? 1 : 0) != 0;
  return due;
}

void RunRecord::save(TrainingSession& session, std::int64_t epoch, const StepReport& r, const Evaluation* eval) {
  const bool numbers = session.device().caps().computes_values;
  totals_.last_train_loss = tally_.mean_loss();
  if (eval) {
    totals_.last_eval = *eval;
    evaluated_ = true;
    const EpochSoFar e = tally_.so_far();
    // Before the checkpoint: a kill between the two rewinds metrics.csv
    // to the last checkpoint, which writes the row again (app/run_folder.h).
    folder_.append_metrics({epoch + 1, session.iteration(), r.lr, tally_.mean_loss(), tally_.accuracy(), eval->loss,
                            eval->accuracy, eval->top5, tally_.rate(), e.peak_load_bytes, e.footprint_bytes,
                            e.wall_seconds, numbers});
  }
  if (r.epoch_end) tally_ = EpochTally{};
  checkpoint(session);
}

void RunRecord::checkpoint(TrainingSession& session) {
  Trainer& trainer = session.trainer();
  const bool numbers = session.device().caps().computes_values;
  folder_.save_checkpoint({session.settings(), session.epoch(), session.batch_in_epoch(), session.iteration(),
                           tally_.so_far(), trainer.loss_scaler().state(), session.device().kernel_choices(),
                           // where the run is, not parameters nobody computed
                           numbers ? trainer.read_state() : std::vector<float>{}});
  checkpointed_at_ = session.iteration();
  last_checkpoint_ = Clock::now();
}

nlohmann::json RunRecord::finish(TrainingSession& session, const nlohmann::json& tuned) {
  // A stop between checkpoints (the window closed): the run is kept where it is.
  if (!session.diverged() && session.iteration() != checkpointed_at_) {
    totals_.last_train_loss = tally_.mean_loss();
    checkpoint(session);
  }
  if (!evaluated_ && !session.diverged()) {  // nothing trained, or stopped mid-epoch
    const Evaluation eval = session.evaluate();
    if (!session.diverged()) totals_.last_eval = eval;  // summary.json keeps the last good evaluation
  }
  // How the run ended: trained to its planned end, stopped short of it
  // (resumable), or diverged.
  totals_.status = session.diverged()                               ? "diverged"
                   : session.iteration() < session.total_iterations() ? "stopped"
                                                                      : "done";
  totals_.wall_seconds = seconds_since(started_);
  if (captures_.recording()) finish_capture(session);  // the run ended inside it: what it recorded
  const nlohmann::json summary = run_summary(session, totals_, comm_, tuned, resumed_with());
  folder_.finish(session.trainer().memory().summary(), settings_.batch_size, session.device().caps().computes_values,
                 summary);
  return summary;
}

}  // namespace tidepool::app
