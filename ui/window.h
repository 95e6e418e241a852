// The desktop window: GLFW + OpenGL 3 + Dear ImGui, one Dashboard per frame.
// With a screenshot file it renders a number of frames once live data is on
// show, writes the window as PNG and closes: how the views are tested under
// xvfb-run.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>

#include "ui/session_link.h"

namespace tidepool::ui {

struct WindowOptions {
  int width = 1600, height = 900;
  std::string title = "Tidepool";
  // Screenshot mode: after `frames` frames that show a finished iteration's
  // data, write the window to this PNG, print the frame rate and the Stats
  // view's rows ("stats | figure | value"), and return.
  std::string screenshot;
  int frames = 1;
  // Screenshot mode: the pointer's position (x, y), for a tooltip in the
  // picture; none: off the window, so that no tooltip covers the views.
  std::optional<std::array<float, 2>> hover;
  // Screenshot mode: a left click here once the views show data (a block
  // of the address map pinned, a tab chosen), before the picture is taken.
  std::optional<std::array<float, 2>> click;
  // Screenshot mode: give up (and fail) when no iteration has reached the
  // views after this long.
  double live_data_timeout_seconds = 600;
  bool show_fragmentation = false;  // open the fragmentation scenario
  int fragmentation_events = 0;     // ... with its first events played (--scenario-step)
  bool overlap_scenario = false;    // the session runs the overlap scenario: show it
  int show_rank = 0;                // a data-parallel run: whose events the views show first
  // Frames are paced to at most this. A software rasteriser (Mesa's
  // llvmpipe, as under Xvfb or a remote desktop) draws on the CPU that
  // training uses: there the window holds the slower rate and training gets
  // the rest.
  double max_fps = 60;
  double software_max_fps = 31;
  // Called once the window is open: where training starts, so that a
  // machine without a display fails before any data is loaded.
  std::function<void()> on_open;
};

// Runs the window until it is closed (or the screenshot is written).
// Returns the process exit status; throws std::runtime_error when no window
// can be opened (no display), with what to do instead.
int run_window(SessionLink& link, const WindowOptions& options);
// Two runs compared (`tidepool view A B`, ui/comparison.h): each link under
// its label ("A: runs/base"), A above B, on shared axes. The options'
// scenarios and rank do not apply.
int run_window(SessionLink& a, const std::string& label_a, SessionLink& b, const std::string& label_b,
               const WindowOptions& options);

}  // namespace tidepool::ui
