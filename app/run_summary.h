// summary.json of a --batch run, written once at its end: what it trained
// and how that ended, its speed, the MemoryPlan it executed (under the keys
// of `tidepool plan --json`), every rank's peak and speed, --tune's decision
// and the memory settings each resume changed.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "app/checkpoint.h"
#include "app/session.h"
#include "engine/comm/communicator.h"

namespace tidepool::app {

// What this invocation of the run added up to.
struct RunTotals {
  const char* status = "done";  // done, stopped (--stop-after, resumable) or diverged
  double train_seconds = 0;     // in training steps
  std::int64_t train_images = 0;
  std::size_t peak_seen = 0;  // the largest peak load of this rank's iterations
  Evaluation last_eval;       // the last good one
  double last_train_loss = 0;
  IterationResult last_compressed;  // the last iteration that compressed offloads
  double wall_seconds = 0;
};

// The memory settings a resume changed, from its first iteration: one
// {"option", "was", "now", "from_iteration"} object each (app/options/
// run_options.h says which settings may change), after those `earlier`
// recorded (the run folder's summary.json of an earlier invocation).
nlohmann::json resumed_changes(const Checkpoint& saved, const RunSettings& now, const nlohmann::json& earlier);

// Every rank calls it (the per-rank figures are all-reduced over `comm`).
nlohmann::json run_summary(TrainingSession& session, const RunTotals& totals, Communicator* comm,
                           const nlohmann::json& tuned, const nlohmann::json& resumed_with);

}  // namespace tidepool::app
