#include "app/session_runner.h"

#include <chrono>

#include "app/device_factory.h"


namespace tidepool::app {
SessionRunner::SessionRunner(RunSettings settings, RingCapacities ring) : settings_(std::move(settings)), ring_(ring) {
  status_.settings = settings_;
  status_.dataset_name = settings_.dataset;
  status_.computes_values = device_computes_values(settings_.device);
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
  }
  changed_.notify_all();
}

bool SessionRunner::wait_for_iterations(std::int64_t iterations, double timeout_seconds) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds), [&] {
    return trained_ >= iterations || status_.state == ui::RunState::finished ||
           status_.state == ui::RunState::failed || status_.state == ui::RunState::diverged;
  });
}

void SessionRunner::publish(const ui::SessionStatus& s, ui::RunState state, const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    const std::uint64_t requests = status_.requests;
    const bool refused = status_.refused;
    std::string message = std::move(status_.message);
    status_ = s;
    status_.requests = requests;  // the outcomes are the runner's
    status_.refused = refused;
    status_.message = std::move(message);
    status_.state = state == ui::RunState::training && paused_ && steps_ == 0 ? ui::RunState::paused : state;
    status_.error = error;
  }
  changed_.notify_all();
}

bool SessionRunner::wait_for_turn(TrainingSession& session) {
  for (;;) {
    std::optional<MemorySettings> request;
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
    // An iteration boundary: a request (one that arrived while paused
    // too) is applied now, before the next iteration, or refused.
    if (request) {
      const ApplyOutcome outcome = session.apply(*request);
      {
        std::lock_guard lock(mutex_);
        ++status_.requests;
        status_.refused = !outcome.applied;
        status_.message = outcome.message;
      }
      publish(session.status(), ui::RunState::training);
    }
    if (go) return true;
  }
}

void SessionRunner::run() {
  RunSettings settings = settings_;
  for (;;) {
    std::unique_ptr<TrainingSession> session;
    try {
      session = std::make_unique<TrainingSession>(settings, SessionOptions{.room_to_grow = true, .for_window = true});
      publish(session->status(), ui::RunState::starting);
      session->start(&ring_);
      publish(session->status(), ui::RunState::training);
      while (!session->finished() && wait_for_turn(*session)) {
        const StepReport r = session->train_iteration();
        {
          std::lock_guard lock(mutex_);
          ++trained_;
        }
        if (r.epoch_end && !session->diverged()) {
          publish(session->status(), ui::RunState::evaluating);
          session->evaluate();
        }
        if (session->diverged()) break;  // no training on garbage: wait below, the last events on show
        publish(session->status(), ui::RunState::training);
      }
      if (session->diverged())
        publish(session->status(), ui::RunState::diverged, session->divergence());
      else if (session->finished())
        publish(session->status(), ui::RunState::finished);
    } catch (const std::exception& e) {
      ui::SessionStatus s = session ? session->status() : status();
      publish(s, ui::RunState::failed, e.what());
    }
    // Finished, failed, diverged, stopped or asked to start over.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || restart_; });
    if (stop_) return;
    settings = *restart_;
    restart_.reset();
    pending_.reset();
    lock.unlock();
    session.reset();  // frees the old device before the new one reserves memory
    ring_.clear();
  }
}

}  // namespace tidepool::app
