// `tidepool diff A B`: what changed between two finished runs. Reads each
// run folder's summary.json and prints the settings that differ, then every
// memory figure (engine/plan/memory_facts.h: the same names as `plan`, the
// window and `--batch`'s report) and the run's speed and results, each with
// B's value, A's, B − A and B / A − 1, so "what did mode all buy over base"
// is one command:
//
//   tidepool diff runs/base runs/all
//
// `--json` prints one object instead: "a" and "b" (the folders),
// "settings" (one {"option", "a", "b"} per setting that differs) and
// "figures" (one {"key", "label", "a", "b", "delta", "relative"} per figure,
// in summary.json's keys and values; delta and relative are null where a
// figure is not a number, relative also where A is 0).
#pragma once

#include <filesystem>
#include <ostream>

#include "app/commands/command.h"

namespace tidepool::app {

struct DiffRequest {
  std::filesystem::path a, b;
  bool json = false;
};

// Writes the comparison to `out`. Throws std::runtime_error with a message
// for the user when a folder is not a finished run (missing, no
// summary.json: app/recorded_run.h's read_run_summary) or its summary.json
// cannot be read.
void diff_runs(const DiffRequest& request, std::ostream& out);

// `tidepool diff A B [--json]`.
Command add_diff_command(CLI::App& cli);

}  // namespace tidepool::app
