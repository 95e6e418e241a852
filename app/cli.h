// The tidepool command line, dispatched in one place:
//
//   tidepool [a run's options]            train in a window that shows what memory does
//   tidepool --batch [a run's options]    train headless, write a run folder
//   tidepool models                       the model zoo, with sizes
//   tidepool plan [a run's options]       that run's memory before it runs, and the alternatives
//   tidepool replay FILE                  an allocation trace through every heuristic
//   tidepool profile -o FILE ...          a device's performance profile
//   tidepool tune --budget SIZE ...       AccUDNN's batch for a budget
//   tidepool view RUN_DIR                 a --batch run folder in the window, read only
//
// Each command is one file of app/commands/, declaring its own options; a
// run's options are declared once, in app/options/run_options.h, and every
// command that takes them embeds them. Exit status: 0 done, 1 for a
// failure the user can act on ("tidepool: error: <what>" on stderr: a bad
// value, a missing file, a refused run), 2 for a malformed command line (an
// unknown option or subcommand, a missing value), with a guess at a slip.
#pragma once

namespace tidepool::app {

// Returns the process exit status.
int run_cli(int argc, char** argv);

}  // namespace tidepool::app
