#include "app/window_run.h"

#include <cstdio>

#include "app/session_runner.h"

namespace tidepool::app {

int run_window(const RunSettings& settings, ui::WindowOptions window) {
  SessionRunner runner(settings);
  window.on_open = [&runner] { runner.start(); };
  const int status = ui::run_window(runner, window);
  runner.stop();
  const ui::SessionStatus s = runner.status();
  if (s.state == ui::RunState::failed || s.state == ui::RunState::diverged) {
    std::fprintf(stderr, "tidepool: error: %s\n", s.error.c_str());
    return 1;
  }
  return status;
}

}  // namespace tidepool::app
