// The options of a window, live (`tidepool`) or recorded (`tidepool view`),
// declared once for both.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "app/options/values.h"

namespace tidepool::app {

struct WindowLook {
  // Write the window as PNG after `frames` frames showing data, then exit.
  std::string screenshot;
  int frames = 1;
  int width = 1600, height = 900;
  // Screenshots: where the pointer is, for a tooltip in the picture (none:
  // off the window, so no tooltip covers the views).
  std::vector<float> hover;  // x, y in pixels, or empty
  // Screenshots: a left click there once the views show data.
  std::vector<float> click;  // x, y in pixels, or empty
};

inline void add_window_options(CLI::App& cmd, WindowLook& w) {
  auto* screenshot = cmd.add_option("--screenshot", w.screenshot,
                                    "write the window as PNG after --frames frames showing data, then exit");
  cmd.add_option("--frames", w.frames, "frames to draw with data before the screenshot")
      ->capture_default_str()
      ->needs(screenshot)
      ->transform(number(1));
  cmd.add_option("--hover", w.hover,
                 "with --screenshot: put the pointer at X,Y (pixels from the top left) so that the picture shows "
                 "what hovering there shows; without it the pointer is off the window and no tooltip covers the views")
      ->needs(screenshot)
      ->delimiter(',')
      ->expected(2)
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--click", w.click,
                 "with --screenshot: click at X,Y once the views show data, before the picture (a block of the "
                 "address map pinned)")
      ->needs(screenshot)
      ->delimiter(',')
      ->expected(2)
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--window-width", w.width, "window width in pixels")
      ->capture_default_str()
      ->transform(number(kLeastWidth, kMostWindow));
  cmd.add_option("--window-height", w.height, "window height in pixels")
      ->capture_default_str()
      ->transform(number(kLeastHeight, kMostWindow));
}

}  // namespace tidepool::app
