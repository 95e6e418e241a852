// `tidepool tune`: AccUDNN's efficiency-optimal minibatch and learning rate
// (engine/plan/batch_tuning.h) for a model under a budget, on a
// performance profile given or measured now, as a table.
#pragma once

#include <cstdint>
#include <ostream>
#include <optional>
#include <string>

#include "app/commands/command.h"
#include "engine/core/fusion.h"
#include "engine/plan/batch_tuning.h"
#include "engine/schedule/memory_settings.h"
#include "engine/run/run_settings.h"

#include <nlohmann/json.hpp>

namespace tidepool::app {

struct TuneRequest {
  // A run's options with a run's defaults: the network tuned (as a run
  // with them builds it), its memory settings (the budget is required),
  // the device measured when no --profile is given (or the simulated GPU's
  // profile), and eq. 9's learning rate that trains well (--lr) at a batch
  // (--batch-size).
  RunSettings run;
  double convexity = kAccudnnConvexity;
  bool json = false;
  bool progress = true;
};

// The model, from the request's profile, or measured on its device at
// 1/8 ... 1 of the largest batch that trains with everything offloaded
// (AccUDNN's profiling); `note` says which.
PerfModel tuning_model(const TuneRequest& q, const Network& net, std::string& note);

int tune_command(const TuneRequest& q, std::ostream& out);

// `tidepool tune --budget SIZE [options]`.
Command add_tune_command(CLI::App& cli);

// `--batch --tune`: the run's settings with AccUDNN's decision in them —
// the batch k*, eq. 9's learning rate for it (from --lr at --batch-size),
// mode accudnn — and the decision as JSON for summary.json. The model is
// --profile's, or one measured now on the run's device at 1/8 ... 1 of
// k_max and saved as profile.json in the run folder (whose path is then
// fixed in the settings' `out`), so that the run plans with it and a
// resumed run finds it. The profiling iterations train a throwaway copy of
// the model, not the run (the paper's count toward training; ours start
// the run from its seed's initialisation, so the same seed gives the same
// run however it was tuned). Throws std::invalid_argument without
// --budget, or when no batch trains without stalls in it.
struct TunedRun {
  RunSettings settings;
  nlohmann::json decision;
  // The profile measured for the decision, when none was given: the run
  // plans with it and writes it into its folder as profile.json once every
  // check has passed (settings.profile names that file, for --resume).
  std::optional<Profile> measured;
};
TunedRun tune_run(RunSettings settings);

}  // namespace tidepool::app
