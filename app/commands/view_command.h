// `tidepool view RUN_DIR`: opens the window on a finished --batch run, read
// only, as a profiler opens a saved capture. Servers train, desktops look:
// the run folder's events.bin holds every event of its traced iterations
// and summary.json what it was trained with (app/recorded_run.h); every
// view works as it does live (zoom, pan, hover) and the controls show the
// settings without letting them change.
//
// `tidepool view snap.pickle` (or its JSON): a PyTorch memory snapshot's
// trace placed by the pytorch heuristic (app/snapshot_run.h), every view
// reading it as a run's events, and a heuristic chooser in the controls
// that re-places it. `--device-index N` picks the snapshot's device, as
// for `tidepool replay`.
//
// `tidepool view A B`: two run folders or snapshots, A above B on shared
// axes (ui/comparison.h), to see what a mode, a heuristic or a budget
// changed; `tidepool diff A B` gives the same comparison in figures.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "app/commands/command.h"
#include "app/options/window_options.h"

namespace tidepool::app {

struct ViewRequest {
  std::filesystem::path path;       // a run folder, or a snapshot file
  std::optional<std::filesystem::path> compared;  // a second one: the two compared
  std::optional<int> device_index;  // a snapshot's device; nothing: the busiest
  WindowLook window;  // as for the live window
};

// What view opens as a run folder: a folder, or nothing at all (refused
// as a run folder, with what is missing). Any file is taken for a snapshot.
bool is_run_folder(const std::filesystem::path& path);

// Returns the process exit status. Throws std::runtime_error with a message
// for the user when the folder is not a finished run folder or its
// events.bin is refused, std::invalid_argument when a file is no PyTorch
// snapshot, and std::runtime_error when no window can be opened (no display).
int view_command(const ViewRequest& request);

// `tidepool view RUN_DIR|SNAPSHOT [RUN_DIR|SNAPSHOT] [--device-index N] [window options]`.
Command add_view_command(CLI::App& cli);

}  // namespace tidepool::app
