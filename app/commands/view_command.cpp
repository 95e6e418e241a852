#include "app/commands/view_command.h"

#include <cstdio>
#include <memory>

#include "app/recorded_run.h"
#ifdef TIDEPOOL_HAVE_GUI
#include "ui/window.h"
#endif

namespace tidepool::app {

int view_command(const ViewRequest& r) {
  // The folder first: a wrong one is refused before a window opens, and
  // on a build without one too.
  RecordedRun run(r.folder);
#ifdef TIDEPOOL_HAVE_GUI
  const ui::SessionStatus s = run.status();
  ui::WindowOptions window;
  window.width = r.window.width;
  window.height = r.window.height;
  window.screenshot = r.window.screenshot;
  window.frames = r.window.frames;
  window.title = "Tidepool: " + s.settings.model + " on " + s.dataset_name + ", recorded in " + r.folder.string();
  return ui::run_window(run, window);
#else
  std::fprintf(stderr,
               "tidepool: error: this build has no window (it was configured without Dear ImGui and GLFW: run "
               "scripts/install-deps.sh and reconfigure); %s is a run folder tidepool view can open where "
               "there is one\n",
               r.folder.string().c_str());
  return 1;
#endif
}

Command add_view_command(CLI::App& cli) {
  auto q = std::make_shared<ViewRequest>();
  auto* cmd = cli.add_subcommand(
      "view", "open a --batch run folder in the window, read only: its traced iterations in every view");
  cmd->add_option("folder", q->folder, "a run folder written by --batch (it holds events.bin)")->required();
  add_window_options(*cmd, q->window);
  return {cmd, [q](bool) { return view_command(*q); }};
}

}  // namespace tidepool::app
