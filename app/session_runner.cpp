#include "app/session_runner.h"

#include <chrono>

#include "app/settings_text.h"

namespace tidepool::app {
namespace {

// The command line's words for settings the window chose.
RunOptions with_settings(RunOptions o, const std::string& model, std::int64_t batch, const ui::MemorySettings& s) {
  o.model = model;
  if (batch > 0) o.batch_size = batch;
  o.mode = to_string(s.mode);
  o.algo = to_string(s.scheme);
  o.transfer = to_string(s.transfer);
  o.order = to_string(s.order);
  o.heuristic = s.heuristic;
  o.budget = s.budget_bytes ? std::to_string(s.budget_bytes) : "";
  o.link_gbps = s.link_gbps;
  o.lookahead = s.lookahead;
  o.compress = s.compress;
  return o;
}

}  // namespace

SessionRunner::SessionRunner(RunOptions options, RingCapacities ring) : options_(std::move(options)), ring_(ring) {
  status_.model = options_.model;
  status_.dataset = options_.dataset;
  status_.batch = options_.batch_size;
}

SessionRunner::~SessionRunner() { stop(); }

void SessionRunner::start(bool paused) {
  {
    std::lock_guard lock(mutex_);
    paused_ = paused;
  }
  thread_ = std::thread([this] { run(); });
}

void SessionRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ui::SessionStatus SessionRunner::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

void SessionRunner::request(const ui::MemorySettings& settings) {
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

void SessionRunner::restart(const std::string& model, std::int64_t batch, const ui::MemorySettings& settings) {
  {
    std::lock_guard lock(mutex_);
    restart_ = with_settings(options_, model, batch, settings);
  }
  changed_.notify_all();
}

bool SessionRunner::wait_for_iterations(std::int64_t iterations, double timeout_seconds) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds), [&] {
    return trained_ >= iterations || status_.state == ui::RunState::finished ||
           status_.state == ui::RunState::failed;
  });
}

void SessionRunner::publish(const ui::SessionStatus& s, ui::RunState state, const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    status_ = s;
    status_.state = state == ui::RunState::training && paused_ && steps_ == 0 ? ui::RunState::paused : state;
    status_.error = error;
  }
  changed_.notify_all();
}

bool SessionRunner::wait_for_turn(TrainingSession& session) {
  for (;;) {
    std::optional<ui::MemorySettings> request;
    bool go = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || restart_ || !paused_ || steps_ > 0 || pending_; });
      if (stop_ || restart_) return false;
      request.swap(pending_);
      if (!paused_) {
        go = true;
      } else if (steps_ > 0) {
        --steps_;
        go = true;
      }
    }
    // A request that arrives while paused is handed over now and applied
    // before the next iteration, whenever that comes.
    if (request) session.request(*request);
    if (go) return true;
  }
}

void SessionRunner::run() {
  RunOptions options = options_;
  for (;;) {
    std::unique_ptr<TrainingSession> session;
    try {
      session = std::make_unique<TrainingSession>(options, SessionOptions{.roomy_arena = true, .for_window = true});
      publish(session->status(), ui::RunState::starting);
      session->start(&ring_);
      publish(session->status(), ui::RunState::training);
      while (!session->finished() && wait_for_turn(*session)) {
        const StepReport r = session->train_iteration();
        {
          std::lock_guard lock(mutex_);
          ++trained_;
        }
        if (r.epoch_end) {
          publish(session->status(), ui::RunState::evaluating);
          session->evaluate();
        }
        publish(session->status(), ui::RunState::training);
      }
      if (session->finished()) publish(session->status(), ui::RunState::finished);
    } catch (const std::exception& e) {
      ui::SessionStatus s = session ? session->status() : status();
      publish(s, ui::RunState::failed, e.what());
    }
    // Finished, failed, stopped or asked to start over.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || restart_; });
    if (stop_) return;
    options = *restart_;
    restart_.reset();
    pending_.reset();
    lock.unlock();
    session.reset();  // frees the old device before the new one reserves memory
    ring_.clear();
  }
}

}  // namespace tidepool::app
