// `tidepool [--batch] [a run's options]`: train, in the window that shows
// what memory does, or headless (--batch) into a run folder
// (app/batch_run.h); --resume continues a saved run (a --batch run's, or a
// window session saved with --out), --tune picks its
// batch first (app/commands/tune_command.h). The command line's own
// options, as the top-level command.
#pragma once

#include "app/commands/command.h"

namespace tidepool::app {

Command add_train_command(CLI::App& cli);

}  // namespace tidepool::app
