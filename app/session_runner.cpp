#include "app/session_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "app/device_factory.h"
#include "app/options/run_options.h"


namespace tidepool::app {
SessionRunner::SessionRunner(RunSettings settings, RingCapacities ring, Communicator* comm)
    : settings_(std::move(settings)), ring_(ring), comm_(comm) {
  if (comm_) rank_events_ = std::make_unique<RankEvents>(*comm_, ring);
  status_.settings = settings_;
  status_.settings.memory.ranks = comm_ ? comm_->size() : 1;
  status_.dataset_name = settings_.dataset;
  status_.computes_values = device_computes_values(settings_.device);
}

SessionRunner::~SessionRunner() { stop(); }

void SessionRunner::record_to(std::unique_ptr<RunRecord> record, std::optional<Checkpoint> resume) {
  if (comm_) throw std::invalid_argument("a data-parallel window keeps no run folder: train with --batch under mpirun");
  record_ = std::move(record);
  resume_ = std::move(resume);
}

void SessionRunner::start(bool paused) {
  {
    std::lock_guard lock(mutex_);
    paused_ = paused;
  }
  thread_ = std::thread([this] { run(); });
}

bool SessionRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The other ranks end their session and send their last events: a few
  // seconds is ample for a rank that is not stuck.
  return !rank_events_ || rank_events_->finish(std::chrono::seconds(10));
}

void SessionRunner::tell_ranks(Turn::Kind kind, const RunSettings& settings) const {
  if (comm_) send_turn(*comm_, Turn{kind, settings});
}

std::vector<int> SessionRunner::event_ranks() const {
  std::vector<int> ranks{0};
  for (int r = 1; rank_events_ && r < rank_events_->ranks(); ++r) ranks.push_back(r);
  return ranks;
}

RingSnapshot SessionRunner::events(int rank) const {
  if (rank == 0) return ring_.snapshot();
  if (rank_events_ && rank > 0 && rank < rank_events_->ranks()) return rank_events_->ring(rank).snapshot();
  return {};
}

std::uint64_t SessionRunner::events_version(int rank) const {
  if (rank == 0) return ring_.version();
  if (rank_events_ && rank > 0 && rank < rank_events_->ranks()) return rank_events_->ring(rank).version();
  return 0;
}

ui::SessionStatus SessionRunner::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

void SessionRunner::request(const MemorySettings& settings) {
  {
    std::lock_guard lock(mutex_);
    pending_ = settings;
  }
  changed_.notify_all();
}

void SessionRunner::pause() {
  std::lock_guard lock(mutex_);
  paused_ = true;
  if (status_.state == ui::RunState::training) status_.state = ui::RunState::paused;
}

void SessionRunner::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
    steps_ = 0;
  }
  changed_.notify_all();
}

void SessionRunner::step() {
  {
    std::lock_guard lock(mutex_);
    paused_ = true;
    ++steps_;
  }
  changed_.notify_all();
}

void SessionRunner::restart(const RunSettings& settings) {
  {
    std::lock_guard lock(mutex_);
    restart_ = settings;
    status_.state = ui::RunState::starting;  // the old session's end is no longer the state (wait_for_iterations)
  }
  changed_.notify_all();
}

void SessionRunner::record_next(std::int64_t iterations) {
  {
    std::lock_guard lock(mutex_);
    capture_asked_ = iterations;
  }
  changed_.notify_all();
}

void SessionRunner::wait_for_iterations(std::int64_t iterations) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    return trained_ >= iterations || status_.state == ui::RunState::finished ||
           status_.state == ui::RunState::failed || status_.state == ui::RunState::diverged;
  });
}

void SessionRunner::publish(const ui::SessionStatus& s, ui::RunState state, const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    const std::uint64_t requests = status_.requests;
    const bool refused = status_.refused, replanning = status_.replanning;
    std::string message = std::move(status_.message), capture = std::move(status_.capture);
    status_ = s;
    status_.can_capture = saving_;
    status_.capture = std::move(capture);
    status_.requests = requests;  // the outcomes are the runner's
    status_.refused = refused;
    status_.replanning = replanning;
    status_.message = std::move(message);
    status_.state = state == ui::RunState::training && paused_ && steps_ == 0 ? ui::RunState::paused : state;
    status_.error = error;
  }
  changed_.notify_all();
}

bool SessionRunner::wait_for_turn(TrainingSession& session) {
  for (;;) {
    std::optional<MemorySettings> request;
    std::optional<std::int64_t> capture;
    bool go = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock,
                    [&] { return stop_ || restart_ || !paused_ || steps_ > 0 || pending_ || capture_asked_; });
      if (stop_ || restart_) return false;
      request.swap(pending_);
      capture.swap(capture_asked_);
      if (!paused_) {
        go = true;
      } else if (steps_ > 0) {
        --steps_;
        go = true;
      }
    }
    // Recording starts with the next iteration, asked for while paused too.
    if (capture) begin_capture(session, *capture);
    // An iteration boundary: a request (one that arrived while paused
    // too) is applied now, before the next iteration, or refused.
    if (request) {
      RunSettings asked = session.settings();
      asked.memory = *request;
      // A saved session is a run that --batch --resume continues to the
      // same bits: what changes its numbers (--algo, --precision) stays.
      const std::vector<std::string> changed = saving_ ? changes_the_numbers(session.settings(), asked)
                                                       : std::vector<std::string>{};
      if (!changed.empty()) asked.memory = session.settings().memory;
      tell_ranks(Turn::Kind::apply, asked);  // every rank re-plans at this same boundary
      {
        std::lock_guard lock(mutex_);
        status_.replanning = true;
      }
      changed_.notify_all();
      const auto planning = std::chrono::steady_clock::now();
      ApplyOutcome outcome;
      if (changed.empty()) {
        outcome = session.apply(*request);
        char took[64];
        std::snprintf(took, sizeof took, " (planned in %.2f s)",
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - planning).count());
        outcome.message += took;
      } else {
        outcome.applied = false;
        outcome.message = "refused: this session is saved as a run, and " + changed.front() +
                          " would change the numbers it computes; start the window without --out to try it";
      }
      {
        std::lock_guard lock(mutex_);
        ++status_.requests;
        status_.replanning = false;
        status_.refused = !outcome.applied;
        status_.message = outcome.message;
      }
      publish(session.status(), ui::RunState::training);
    }
    if (go) {
      tell_ranks(Turn::Kind::train, session.settings());
      return true;
    }
  }
}

void SessionRunner::train(TrainingSession& session, RunRecord* record) {
  // --stop-after N: a recorded session trains N iterations and stops, saved.
  const std::int64_t total = session.total_iterations();
  const std::int64_t stop_at =
      record && settings_.stop_after ? std::min(total, session.iteration() + settings_.stop_after) : total;
  recording_ = record;
  record_opened_ = false;
  while (session.iteration() < stop_at && wait_for_turn(session)) {
    // The folder is written from the first iteration on (its start's events
    // wait in memory): a session closed before it trains leaves it as it
    // was, unless the user asked to record (begin_capture).
    if (record && !record_opened_) {
      record->open(session);
      record_opened_ = true;
    }
    const std::int64_t epoch = session.epoch();
    const StepReport r = session.train_iteration();
    {
      std::lock_guard lock(mutex_);
      ++trained_;
    }
    if (session.diverged()) break;  // no training on garbage: wait below, the last events on show
    if (record) {
      record->add(session, r);
      announce_capture(*record);
    }
    // A recorded run's last iteration is scored and written as --batch's is.
    if (r.epoch_end || (record && session.finished())) {
      publish(session.status(), ui::RunState::evaluating);
      session.check_ranks_agree();  // as every other rank does now (app/window_ranks.cpp)
      const Evaluation eval = session.evaluate();
      if (session.diverged()) break;
      if (record) record->save(session, epoch, r, &eval);
    } else if (record && record->checkpoint_due(session)) {
      record->save(session, epoch, r, nullptr);
    }
    publish(session.status(), ui::RunState::training);
  }
  recording_ = nullptr;
  if (!record) return;
  if (!record_opened_) {
    std::printf("nothing trained: %s left as it was\n", record->path().string().c_str());
    std::fflush(stdout);
    return;
  }
  // Its training is over (its end, a stop, a divergence, the window closed
  // or a scenario starting over): the run folder is finished now.
  if (!session.diverged()) publish(session.status(), ui::RunState::evaluating);  // finish() may evaluate
  const nlohmann::json summary = record->finish(session);
  announce_capture(*record);  // one the run's end cut short
  const std::string folder = record->path().string(), status = summary["status"].get<std::string>();
  std::printf("saved the run in %s: %s, %lld of %lld iterations (`tidepool view %s` shows it%s)\n", folder.c_str(),
              status.c_str(), static_cast<long long>(session.iteration()), static_cast<long long>(total),
              folder.c_str(),
              status == "stopped" ? (", `tidepool --batch --resume " + folder + "` continues it").c_str() : "");
  std::fflush(stdout);
}

void SessionRunner::begin_capture(TrainingSession& session, std::int64_t iterations) {
  std::string said;
  if (!recording_) {
    said = "refused: recording iterations needs a run folder to keep them in; start the window with --out DIR";
  } else {
    try {
      if (!record_opened_) {  // asked before the first iteration: the folder is written now
        recording_->open(session);
        record_opened_ = true;
      }
      const std::filesystem::path folder = recording_->capture(session, iterations);
      said = "recording the next iterations into " + folder.string();
    } catch (const std::exception& e) {
      said = std::string("refused: ") + e.what();
    }
  }
  {
    std::lock_guard lock(mutex_);
    status_.capture = said;
  }
  changed_.notify_all();
}

void SessionRunner::announce_capture(RunRecord& record) {
  const std::optional<std::filesystem::path> done = record.take_captured();
  if (!done) return;
  const std::string said = "recorded in " + done->string() + ": `tidepool view " + done->string() + "` shows it";
  std::printf("%s\n", said.c_str());
  std::fflush(stdout);
  {
    std::lock_guard lock(mutex_);
    status_.capture = said;
  }
  changed_.notify_all();
}

void SessionRunner::run() {
  RunSettings settings = settings_;
  for (bool first = true;; first = false) {
    // The first session's run folder, where there is one: declared before
    // the session, whose trainer sends events to it until it is gone.
    std::unique_ptr<RunRecord> record = first ? std::move(record_) : nullptr;
    saving_ = record != nullptr;
    std::optional<Checkpoint> resume = first ? std::move(resume_) : std::nullopt;
    FanOutSink sinks;  // the ring, and the run folder's
    std::unique_ptr<TrainingSession> session;
    try {
      if (!first) tell_ranks(Turn::Kind::restart, settings);  // the other ranks start over with this one
      session = std::make_unique<TrainingSession>(
          settings, SessionOptions{.room_to_grow = true,
                                   .for_window = true,
                                   .comm = comm_,
                                   .kernel_choices = resume ? resume->kernel_choices : std::vector<std::string>{}});
      if (record && record->nothing_to_do(*session))
        throw std::invalid_argument("the run in " + settings.resume + " is finished (" +
                                    std::to_string(session->total_iterations()) + " iterations): nothing to do, "
                                    "nothing changed. `tidepool view " + settings.resume + "` shows it; a later "
                                    "--epochs or --iterations continues it");
      publish(session->status(), ui::RunState::starting);
      sinks.add(ring_);
      if (record && record->sink()) sinks.add(*record->sink());
      session->start(&sinks);
      // Restoring can still refuse (a checkpoint that does not fit this data).
      if (resume)
        session->restore(resume->state, resume->epoch, resume->batch_in_epoch, resume->iteration, resume->loss_scale);
      resume.reset();  // its state is the session's now
      if (!first && !settings_.out.empty()) {
        std::printf("this session is not saved: only the window's first session is, in %s\n", settings_.out.c_str());
        std::fflush(stdout);
      }
      publish(session->status(), ui::RunState::training);
      train(*session, record.get());
      if (session->diverged())
        publish(session->status(), ui::RunState::diverged, session->divergence());
      else if (session->finished() || record)
        publish(session->status(), ui::RunState::finished);
    } catch (const std::exception& e) {
      ui::SessionStatus s = session ? session->status() : status();
      publish(s, ui::RunState::failed, e.what());
    }
    // Finished, failed, diverged, stopped or asked to start over.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || restart_; });
    if (stop_) {
      lock.unlock();
      try {
        tell_ranks(Turn::Kind::stop, settings);
      } catch (const CommError&) {
        // A rank is gone: stop() finds it has not finished, and the caller ends the job.
      }
      return;
    }
    settings = *restart_;
    restart_.reset();
    pending_.reset();
    lock.unlock();
    session.reset();  // frees the old device before the new one reserves memory
    ring_.clear();
  }
}

}  // namespace tidepool::app
