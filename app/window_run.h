// `tidepool` without --batch: training on its own thread (SessionRunner)
// and the window on this one. Built when the GUI is (TIDEPOOL_HAVE_GUI).
#pragma once

#include "engine/run/run_settings.h"
#include "ui/window.h"

namespace tidepool::app {

// Returns the process exit status.
int run_window(const RunSettings& settings, ui::WindowOptions window);

}  // namespace tidepool::app
