// `tidepool` without --batch: training on its own thread (SessionRunner)
// and the window on this one. Built when the GUI is (TIDEPOOL_HAVE_GUI).
#pragma once

#include <memory>
#include <optional>

#include "app/checkpoint.h"
#include "app/options/window_options.h"
#include "app/run_record.h"
#include "engine/comm/communicator.h"
#include "engine/run/run_settings.h"
#include "ui/window.h"

namespace tidepool::app {

// The window's look as the command line gave it (--screenshot, --frames,
// --hover, --click, the size), for a live or a recorded window.
ui::WindowOptions window_options(const WindowLook& look, std::string title);

// Returns the process exit status. `ranks`: a data-parallel run's, this
// being rank 0 (the others follow: app/window_ranks.h); null on one process.
// `record`: where the session is saved (--out or --resume; its checks
// passed), continuing `resume` where given (SessionRunner::record_to).
int run_window(const RunSettings& settings, ui::WindowOptions window, Communicator* ranks = nullptr,
               std::unique_ptr<RunRecord> record = nullptr, std::optional<Checkpoint> resume = std::nullopt);

}  // namespace tidepool::app
