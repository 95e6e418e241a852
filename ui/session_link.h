// The UI's whole view of a training session: it reads events (a RingSink
// snapshot) and a status, and writes settings requests and run commands.
// It never holds the engine's objects; app/ implements this interface with
// a session running on its own thread, a recorded run implements it read
// only (`tidepool view`), and tests implement it by hand.
//
// Settings requests are applied by the session at the next iteration
// boundary (re-plan, re-place, go on training). A request that cannot work
// is refused with its reason, and training goes on with the settings it had.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/observe/sinks/ring_sink.h"
#include "engine/plan/memory_summary.h"
#include "engine/run/loss_scaler.h"
#include "engine/run/run_settings.h"

namespace tidepool::ui {

// diverged: an iteration or evaluation produced a NaN or an infinity; the
// session trains no more (its parameters are garbage) and `error` says
// where and why. snapshot: a recorded allocation trace (a PyTorch memory
// snapshot) placed by a heuristic: no training, only the heuristic changes.
enum class RunState : std::uint8_t { starting, training, paused, evaluating, finished, failed, diverged, recorded, snapshot };
inline const char* to_string(RunState s) {
  switch (s) {
    case RunState::starting: return "starting";
    case RunState::training: return "training";
    case RunState::paused: return "paused";
    case RunState::evaluating: return "evaluating";
    case RunState::finished: return "finished";
    case RunState::failed: return "failed";
    case RunState::diverged: return "diverged";
    case RunState::recorded: return "recorded";
    case RunState::snapshot: return "snapshot";
  }
  return "?";
}

// What the views write where a loss or an accuracy would go when the
// device computes no values (SessionStatus::computes_values): the sim
// device's read back as zeros, which would read as a result.
inline constexpr const char* kNoNumbers = "simulated: no numbers";

// What the plan's performance model predicts for one train iteration
// (MemoryPlan::predicted, engine/plan/accudnn_schedule.h), for the views to
// show beside what the iterations took.
struct PredictedIteration {
  double iteration_us = 0;
  double stall_us = 0;  // the compute stream waiting for prefetches (and for memory)
};

struct SessionStatus {
  RunState state = RunState::starting;
  // The run's settings, the memory ones as in effect.
  RunSettings settings;
  std::string dataset_name;  // as the dataset names itself
  std::string device;
  std::int64_t iteration = 0, total_iterations = 0;  // done, planned
  std::int64_t epoch = 0, epochs = 0;                // the current (0-based), planned
  // The MemoryPlan in effect: pool, smallest workable budget, the arena
  // any budget must fit, planned peak load, pinned bytes, AutoSwap's load
  // limit, parking (engine/plan/memory_summary.h).
  MemorySummary memory;
  bool link_adjustable = false;  // the device simulates its link (cpu)
  // false: the device computes no values (sim): losses and accuracies are
  // zeros and the views say kNoNumbers instead; times are simulated.
  bool computes_values = true;
  // The plan's prediction, where the run has a performance model (the sim
  // device, or --profile); a recorded run has none.
  std::optional<PredictedIteration> predicted;
  float test_accuracy = -1;      // the last evaluation's, -1 before the first
  // fp16's loss scale and the steps it skipped (engine/run/loss_scaler.h);
  // none in the other precisions.
  std::optional<LossScalerState> loss_scale;
  // A request is being planned now, at an iteration boundary: the next
  // iteration waits for it, the window goes on drawing.
  bool replanning = false;
  // The last request's outcome: applied (refused = false) or refused with
  // the reason in `message`, and how long planning it took. `requests`
  // counts requests handled.
  std::uint64_t requests = 0;
  bool refused = false;
  std::string message;
  std::string error;  // why the run failed (state failed), or where it diverged (diverged, or a recorded run's)
  // The window's "record the next K iterations" (SessionLink::record_next):
  // possible where the session is saved in a run folder (--out), and what
  // became of the last request: recording into a folder, recorded there,
  // or refused with the reason ("" before any).
  bool can_capture = false;
  std::string capture;
  // A snapshot (state snapshot): the most PyTorch's own allocator reserved
  // in the trace (its segment events), beside the heuristic's footprint.
  std::size_t snapshot_reserved_bytes = 0;
};

class SessionLink {
 public:
  virtual ~SessionLink() = default;
  virtual SessionStatus status() const = 0;
  // The ranks of a data-parallel run whose events this link holds, rank 0
  // (this process's, whose status and controls these are) first; {0} on
  // one process. The views show one rank's at a time.
  virtual std::vector<int> event_ranks() const { return {0}; }
  // Rank `rank`'s events so far (one of event_ranks(); empty for any
  // other); events_version(rank) changes whenever there are new ones.
  virtual RingSnapshot events(int rank) const = 0;
  virtual std::uint64_t events_version(int rank) const = 0;
  // A recorded run: the views show it, nothing can be changed.
  virtual bool read_only() const { return false; }
  // The call stack that allocated a block (AllocEvent::tensor), innermost
  // frame first, one a line, where the events come from a trace that
  // records one (a PyTorch snapshot); "" elsewhere.
  virtual std::string block_stack(std::int64_t /*block*/) const { return {}; }
  // Applied at the next iteration boundary; a newer request replaces one
  // not yet applied.
  virtual void request(const MemorySettings& settings) = 0;
  virtual void pause() = 0;
  virtual void resume() = 0;
  virtual void step() = 0;  // while paused: train one iteration, then pause again
  // Starts over with other settings (a teaching scenario) on the same data.
  virtual void restart(const RunSettings& settings) = 0;
  // Records the next `iterations` iterations as the run folder's first
  // traced ones are recorded, into a folder of their own inside it
  // (app/capture_recorder.h); SessionStatus::capture says what became of
  // it. Nothing where there is no session to record (a recorded run, a
  // snapshot).
  virtual void record_next(std::int64_t /*iterations*/) {}
};

}  // namespace tidepool::ui
