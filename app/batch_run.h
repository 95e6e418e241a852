// `tidepool --batch`: trains headless and leaves a run folder behind —
// metrics.csv, trace.json, memory_load.csv, checkpoint.bin, summary.json.
#pragma once

#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "app/checkpoint.h"
#include "app/run_options.h"

namespace tidepool::app {

// The options of a resumed run: the checkpoint's, except what the command
// line gave explicitly (`given` holds option names such as "epochs").
// Throws CheckpointError when a given model, dataset or batch size differs
// from the checkpoint's.
RunOptions resume_options(const RunOptions& cli, const std::set<std::string>& given,
                          const Checkpoint& saved, const std::string& folder);

// Runs the training; returns summary.json's content. Throws an exception
// with a message for the user on bad input (unknown model, missing data,
// diverged training, ...); the run folder keeps what was written so far.
nlohmann::json run_batch(const RunOptions& options, const std::optional<Checkpoint>& resume);

}  // namespace tidepool::app
