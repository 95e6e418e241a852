// `tidepool view RUN_DIR`: opens the window on a finished --batch run, read
// only, as a profiler opens a saved capture. Servers train, desktops look:
// the run folder's events.bin holds every event of its traced iterations
// and summary.json what it was trained with (app/recorded_run.h); every
// view works as it does live (zoom, pan, hover) and the controls show the
// settings without letting them change.
#pragma once

#include <filesystem>
#include <string>

#include "app/commands/command.h"
#include "app/options/window_options.h"

namespace tidepool::app {

struct ViewRequest {
  std::filesystem::path folder;
  WindowLook window;  // as for the live window
};

// Returns the process exit status. Throws std::runtime_error with a message
// for the user when the folder is not a finished run folder or its
// events.bin is refused, and when no window can be opened (no display).
int view_command(const ViewRequest& request);

// `tidepool view RUN_DIR [window options]`.
Command add_view_command(CLI::App& cli);

}  // namespace tidepool::app
