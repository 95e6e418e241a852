#include "app/commands/view_command.h"

#include <cstdio>
#include <memory>
#include <string>

#include "app/commands/replay_command.h"  // add_device_index_option
#include "app/recorded_run.h"
#include "app/snapshot_run.h"
#ifdef TIDEPOOL_HAVE_GUI
#include "app/window_run.h"
#endif

namespace tidepool::app {

namespace {

#ifndef TIDEPOOL_HAVE_GUI
int no_window(const ViewRequest& r) {
  std::fprintf(stderr,
               "tidepool: error: this build has no window (it was configured without Dear ImGui and GLFW: run "
               "scripts/install-deps.sh and reconfigure); %s is a %s tidepool view can open where there is one\n",
               r.path.string().c_str(), is_run_folder(r.path) ? "run folder" : "snapshot");
  return 1;
}
#endif

}  // namespace

bool is_run_folder(const std::filesystem::path& path) {
  std::error_code ec;
  // What does not exist is taken for a folder: RecordedRun says what is missing.
  return std::filesystem::is_directory(path, ec) || !std::filesystem::exists(path, ec);
}

namespace {

// A run folder or a snapshot, opened (and so checked) for the window.
std::unique_ptr<ui::SessionLink> open_link(const std::filesystem::path& path, std::optional<int> device_index) {
  if (!is_run_folder(path)) return std::make_unique<SnapshotRun>(path, device_index);
  if (device_index)
    throw std::invalid_argument(path.string() + ": --device-index picks a device of a PyTorch snapshot; this is a run folder");
  return std::make_unique<RecordedRun>(path);
}

// Two compared: both opened before a window is, each named by its path.
int compare(const ViewRequest& r) {
  const std::unique_ptr<ui::SessionLink> a = open_link(r.path, r.device_index), b = open_link(*r.compared, r.device_index);
#ifdef TIDEPOOL_HAVE_GUI
  const std::string label_a = "A: " + r.path.string(), label_b = "B: " + r.compared->string();
  return ui::run_window(*a, label_a, *b, label_b,
                        window_options(r.window, "Tidepool: " + label_a + " compared with " + label_b));
#else
  return no_window(r);
#endif
}

}  // namespace

int view_command(const ViewRequest& r) {
  if (r.compared) return compare(r);
  // The folder or the file first: a wrong one is refused before a window
  // opens, and on a build without one too.
  if (is_run_folder(r.path)) {
    if (r.device_index)
      throw std::invalid_argument(r.path.string() + ": --device-index picks a device of a PyTorch snapshot; this is a run folder");
    RecordedRun run(r.path);
#ifdef TIDEPOOL_HAVE_GUI
    const ui::SessionStatus s = run.status();
    return ui::run_window(run, window_options(r.window, "Tidepool: " + s.settings.model + " on " + s.dataset_name +
                                                            ", recorded in " + r.path.string()));
#else
    return no_window(r);
#endif
  }
  SnapshotRun run(r.path, r.device_index);
#ifdef TIDEPOOL_HAVE_GUI
  const SnapshotTrace& t = run.trace();
  std::printf("snapshot %s: device %d of %d, %zu events, placed by %s\n", r.path.string().c_str(), t.device,
              t.devices, t.trace.size(), kSnapshotHeuristic);
  return ui::run_window(run, window_options(r.window, "Tidepool: PyTorch snapshot " + r.path.string() + ", device " +
                                                          std::to_string(t.device)));
#else
  return no_window(r);
#endif
}

Command add_view_command(CLI::App& cli) {
  auto q = std::make_shared<ViewRequest>();
  auto* cmd = cli.add_subcommand(
      "view", "open a --batch run folder in the window, read only (its traced iterations in every view), or a "
              "PyTorch memory snapshot placed by a heuristic you choose in the window; two of them to compare "
              "them, one above the other on the same axes");
  cmd->add_option("path", q->path,
                  "a run folder written by --batch (it holds events.bin), or a PyTorch snapshot (_dump_snapshot's "
                  "pickle, or its JSON)")
      ->required();
  cmd->add_option("compared", q->compared, "a second run folder or snapshot, shown under the first on shared axes");
  add_device_index_option(*cmd, q->device_index);
  add_window_options(*cmd, q->window);
  return {cmd, [q](bool) { return view_command(*q); }};
}

}  // namespace tidepool::app
