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
// an enum's words come from its table, a number is checked against its
// range as it is read. Every failure a user can cause ends with
// "tidepool: error: <what>" on stderr and exit status 1 (CLI11's words and
// status, 100 and up, for a malformed command line: an unknown option, a
// missing value).
#pragma once

namespace tidepool::app {

// Returns the process exit status.
int run_cli(int argc, char** argv);

}  // namespace tidepool::app
