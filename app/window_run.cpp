#include "app/window_run.h"

#include <cstdio>

#include "app/ranks.h"
#include "app/session_runner.h"

namespace tidepool::app {

ui::WindowOptions window_options(const WindowLook& look, std::string title) {
  ui::WindowOptions window;
  window.width = look.width;
  window.height = look.height;
  window.screenshot = look.screenshot;
  window.frames = look.frames;
  if (look.hover.size() == 2) window.hover = std::array<float, 2>{look.hover[0], look.hover[1]};
  if (look.click.size() == 2) window.click = std::array<float, 2>{look.click[0], look.click[1]};
  window.title = std::move(title);
  return window;
}

int run_window(const RunSettings& settings, ui::WindowOptions window, Communicator* ranks,
               std::unique_ptr<RunRecord> record, std::optional<Checkpoint> resume) {
  SessionRunner runner(settings, kWindowRing, ranks);
  if (record) runner.record_to(std::move(record), std::move(resume));
  window.on_open = [&runner] { runner.start(); };
  const int status = ui::run_window(runner, window);
  if (!runner.stop()) {
    // A rank neither stopped nor said goodbye: it is stuck in a collective
    // whose peer is gone (an iteration rank 0 failed in), or dead. Waiting
    // for it would hang the job.
    std::fprintf(stderr, "tidepool: %serror: the other ranks did not stop when the window closed; ending the job\n",
                 rank_prefix(ranks).c_str());
    std::fflush(stderr);
    stop_all_ranks(ranks, 1);
  }
  const ui::SessionStatus s = runner.status();
  if (s.state == ui::RunState::failed || s.state == ui::RunState::diverged) {
    std::fprintf(stderr, "tidepool: %serror: %s\n", rank_prefix(ranks).c_str(), s.error.c_str());
    return 1;
  }
  return status;
}

}  // namespace tidepool::app
