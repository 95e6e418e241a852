// The tidepool command line, built and dispatched in one place:
//
//   tidepool [training options]           train in a window that shows what memory does
//   tidepool --batch [training options]   train headless, write a run folder
//   tidepool models                       the model zoo, with sizes
//   tidepool plan --model M ...           the dry-run planner's table
//   tidepool replay FILE                  an allocation trace through every heuristic
//   tidepool view RUN_DIR                 a finished --batch run in the window, read only
//   tidepool view RUN_DIR                 a --batch run folder in the window, read only
//
// The options are parsed once, into a RunSettings (engine/run/run_settings.h);
// an enum's words come from its table. Every failure a user can cause ends
// with "tidepool: error: <what>" on stderr and exit status 1 (2 for a
// malformed command line).
#pragma once

namespace tidepool::app {

// Returns the process exit status.
int run_cli(int argc, char** argv);

}  // namespace tidepool::app
