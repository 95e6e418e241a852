// The UI's whole view of a training session: it reads events (a RingSink
// snapshot) and a status, and writes settings requests and run commands.
// It never holds the engine's objects; app/ implements this interface with
// a session running on its own thread, and tests implement it by hand.
//
// Settings requests are applied by the session at the next iteration
// boundary (re-plan, re-place, go on training). A request that cannot work
// is refused with its reason, and training goes on with the settings it had.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/plan/schedule.h"
#include "engine/observe/sinks/ring_sink.h"

namespace tidepool::ui {

// What may change between iterations.
struct MemorySettings {
  ConvScheme scheme = ConvScheme::p;
  OffloadMode mode = OffloadMode::base;
  AllocOrder order = AllocOrder::prefetch_first;
  TransferMode transfer = TransferMode::async;
  int lookahead = 1;             // prefetches in flight beyond the current layer's needs
  bool compress = false;         // offloads zero-value compressed into pageable host memory
  std::string heuristic = "best-fit";
  std::size_t budget_bytes = 0;  // the pool; 0: what these settings need
  double link_gbps = 0;          // cpu device: simulated host link, 0 = unthrottled
  bool operator==(const MemorySettings&) const = default;
};

enum class RunState : std::uint8_t { starting, training, paused, evaluating, finished, failed };
inline const char* to_string(RunState s) {
  switch (s) {
    case RunState::starting: return "starting";
    case RunState::training: return "training";
    case RunState::paused: return "paused";
    case RunState::evaluating: return "evaluating";
    case RunState::finished: return "finished";
    case RunState::failed: return "failed";
  }
  return "?";
}

struct SessionStatus {
  RunState state = RunState::starting;
  std::string model, dataset, device;
  std::int64_t batch = 0;
  std::int64_t iteration = 0, total_iterations = 0;  // done, planned
  std::int64_t epoch = 0, epochs = 0;                // the current (0-based), planned
  MemorySettings settings;                           // in effect
  std::size_t pool_bytes = 0;       // the budget in effect
  std::size_t minimum_budget = 0;   // the smallest pool the current settings work in
  std::size_t arena_bytes = 0;      // the most any budget may be (reserved at start)
  std::size_t planned_peak_load_bytes = 0;
  std::size_t pinned_host_bytes = 0;  // the current schedule's offloaded bytes
  std::size_t load_limit_bytes = 0;   // AutoSwap: the peak load it keeps under (0: none)
  // Async offloads: how many freed blocks stay parked at once, so forward
  // does not reuse them and wait for their copies (0: none, the pool is too
  // tight; kParkUntilNeeded: every one, until the pool needs the room), and
  // a larger pool that parks more (0: none known). See Trainer::park_horizon.
  int park_horizon = 0;
  std::size_t parking_budget = 0;
  bool parks_offloads() const { return park_horizon > 0; }
  bool link_adjustable = false;       // the device simulates its link (cpu)
  float test_accuracy = -1;           // the last evaluation's, -1 before the first
  // The last request's outcome: applied (refused = false) or refused with
  // the reason in `message`. `requests` counts requests handled.
  std::uint64_t requests = 0;
  bool refused = false;
  std::string message;
  std::string error;  // why the run failed (state failed)
};

class SessionLink {
 public:
  virtual ~SessionLink() = default;
  virtual SessionStatus status() const = 0;
  // The events so far; version() changes whenever there are new ones.
  virtual RingSnapshot events() const = 0;
  virtual std::uint64_t events_version() const = 0;
  // Applied at the next iteration boundary; a newer request replaces one
  // not yet applied.
  virtual void request(const MemorySettings& settings) = 0;
  virtual void pause() = 0;
  virtual void resume() = 0;
  virtual void step() = 0;  // while paused: train one iteration, then pause again
  // Starts over with another model and batch size (a teaching scenario) on
  // the same data; batch 0 keeps the current one.
  virtual void restart(const std::string& model, std::int64_t batch, const MemorySettings& settings) = 0;
};

}  // namespace tidepool::ui
