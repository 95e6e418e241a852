#include "app/commands/train_command.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "app/batch_run.h"
#include "app/checkpoint.h"
#include "app/run_record.h"
#include "app/commands/tune_command.h"
#include "app/options/run_options.h"
#include "app/options/window_options.h"
#include "app/ranks.h"
#include "app/window_ranks.h"
#include "ui/scene/overlap.h"
#ifdef TIDEPOOL_HAVE_GUI
#include "app/window_run.h"
#endif

namespace tidepool::app {
namespace {

struct TrainRequest {
  RunSettings settings;
  std::unique_ptr<RunOptions> options;  // what the command line gave
  bool batch = false, tune = false;
  WindowLook look;
  int show_rank = 0;
  bool fragmentation = false, overlap = false;
  int scenario_step = 0;  // the fragmentation scenario's events played when it opens
  // The window's own options, and whether any was given (they mean nothing with --batch).
  const char* window_option_given() const {
    return !look.screenshot.empty() ? "--screenshot"
           : fragmentation          ? "--fragmentation-scenario"
           : overlap                ? "--overlap-scenario"
           : show_rank > 0          ? "--show-rank"
                                    : nullptr;
  }
};

// The run `saved` continues, with what this command line gave (the rules
// of app/batch_run.h's resume_settings), for the window and --batch alike.
RunSettings continued(const RunSettings& s, const TrainRequest& q, const Checkpoint& saved) {
  std::set<std::string> given;
  for (const RunOption& o : q.options->given()) given.insert(o.name);
  return resume_settings(s, given, saved, s.resume);
}

// The window; under mpirun (`ranks`) rank 0 opens it and the other ranks
// follow its turns headless (app/window_ranks.h), so only rank 0 needs a
// display.
int train_in_window(RunSettings settings, const TrainRequest& w, Communicator* ranks) {
  // The window writes a run folder only where it is told to (--out DIR, or
  // --resume DIR), and then as --batch does; the folder's other options
  // without one would be ignored without a word.
  std::string folder_options;
  for (const RunOption& o : w.options->given())
    if (o.run_folder) folder_options += (folder_options.empty() ? "--" : ", --") + o.name;
  const bool saves = !settings.out.empty() || !settings.resume.empty();
  if (ranks && !folder_options.empty())
    throw std::invalid_argument(folder_options + ": a data-parallel window keeps no run folder (under mpirun, "
                                "train with --batch to write one)");
  if (!saves && !folder_options.empty())
    throw std::invalid_argument(folder_options + ": the window writes a run folder only with --out DIR (or "
                                "--resume DIR): give one, or add --batch to train headless into one");
  if (w.overlap && !settings.resume.empty())
    throw std::invalid_argument("--overlap-scenario trains a network of its own: it cannot continue the run in " +
                                settings.resume + " (leave out --resume)");
  const int size = ranks ? ranks->size() : 1;
  if (w.show_rank >= size)
    throw std::invalid_argument("--show-rank " + std::to_string(w.show_rank) + ": " +
                                (size == 1 ? std::string("this run is one process (start ranks with mpirun -np N)")
                                           : "the run's ranks are 0 to " + std::to_string(size - 1)));
  if (w.overlap) settings = ui::overlap_run(settings, TransferMode::sync, settings.memory.link_gbps);
  if (ranks && ranks->rank() > 0) {
    follow_window(settings, *ranks);
    return 0;
  }
#ifdef TIDEPOOL_HAVE_GUI
  // A saved session: the checkpoint it continues, and the folder's checks,
  // before the window opens, so that a refusal is said as --batch says it
  // and leaves the disk as it was.
  std::optional<Checkpoint> checkpoint;
  if (!settings.resume.empty()) {
    checkpoint = load_checkpoint(std::filesystem::path(settings.resume) / "checkpoint.bin");
    settings = continued(settings, w, *checkpoint);
  }
  std::unique_ptr<RunRecord> record;
  if (saves) record = std::make_unique<RunRecord>(settings, checkpoint ? &*checkpoint : nullptr);
  ui::WindowOptions window = window_options(w.look, "Tidepool: " + settings.model + " on " + settings.dataset);
  window.show_fragmentation = w.fragmentation;
  window.fragmentation_events = w.scenario_step;
  window.overlap_scenario = w.overlap;
  window.show_rank = w.show_rank;
  return run_window(settings, window, ranks, std::move(record), std::move(checkpoint));
#else
  std::fprintf(stderr,
               "tidepool: error: this build has no window (it was configured without Dear ImGui and GLFW: run "
               "scripts/install-deps.sh and reconfigure); train headless with --batch\n");
  return 1;
#endif
}

int train(TrainRequest& q, bool quiet) {
  RunSettings s = q.settings;
  s.progress = !quiet;
  if (q.tune && !q.batch)
    throw std::invalid_argument("--tune is for --batch runs (the window's batch is chosen when it starts)");
  // Under mpirun: the ranks of a data-parallel run (app/ranks.h).
  std::unique_ptr<Communicator> ranks = join_ranks();
  try {
    if (ranks && q.tune)
      throw std::invalid_argument(
          "--tune profiles one process; under mpirun, give the batch it chose with --batch-size");
    if (ranks && ranks->rank() > 0) {
      // Rank 0 speaks for the run; the others say only what went wrong (stderr).
      s.progress = false;
      if (!std::freopen("/dev/null", "w", stdout))
        throw std::runtime_error("cannot silence rank " + std::to_string(ranks->rank()));
    }
    if (!q.batch) return train_in_window(s, q, ranks.get());
    if (const char* name = q.window_option_given())  // it would otherwise be ignored without a word
      throw std::invalid_argument(std::string(name) + " is for the window: leave out --batch");
    std::optional<Checkpoint> checkpoint;
    if (!s.resume.empty()) {
      checkpoint = load_checkpoint_on_ranks(std::filesystem::path(s.resume) / "checkpoint.bin", ranks.get());
      s = continued(s, q, *checkpoint);
    }
    if (q.tune) {
      if (checkpoint)
        throw std::invalid_argument("--tune decided this run's batch when it started; resume it without --tune");
      const TunedRun tuned = tune_run(s);
      run_batch(tuned.settings, std::nullopt, tuned.decision, nullptr, tuned.measured ? &*tuned.measured : nullptr);
      return 0;
    }
    run_batch(s, checkpoint, nullptr, ranks.get());
    return 0;
  } catch (const std::exception& e) {
    return report_failure(e, ranks.get());  // and the other ranks stopped: they may be waiting for this one
  }
}

}  // namespace

Command add_train_command(CLI::App& cli) {
  auto q = std::make_shared<TrainRequest>();
  cli.add_flag("--batch", q->batch, "train headless and write a run folder (no window)");
  q->options = std::make_unique<RunOptions>(cli, q->settings);
  q->options->all();
  cli.add_flag("--tune", q->tune,
               "with --batch and --budget: train at AccUDNN's efficiency-optimal batch, with eq. 9's learning rate "
               "for it and mode accudnn (profiled first unless --profile is given)");
  add_window_options(cli, q->look);
  auto* fragmentation =
      cli.add_flag("--fragmentation-scenario", q->fragmentation, "window: open the fragmentation teaching scenario");
  cli.add_option("--scenario-step", q->scenario_step,
                 "window: open the fragmentation scenario with its first N events played (past the last: all of "
                 "them), for a screenshot of the pools mid-sequence")
      ->needs(fragmentation)
      ->check(CLI::NonNegativeNumber);
  cli.add_option("--show-rank", q->show_rank,
                 "window under mpirun: the rank whose timeline, address map and memory load the views show first "
                 "(the Rank menu changes it)")
      ->check(CLI::NonNegativeNumber);
  cli.add_flag("--overlap-scenario", q->overlap,
               "window: train the overlap teaching scenario (vdnn_constructed, every input offloaded, sync "
               "transfers on a throttled link)");
  return {&cli, [q](bool quiet) { return train(*q, quiet); }};
}

}  // namespace tidepool::app
