// The tidepool command line:
//
//   tidepool [training options]           train in a window that shows what memory does
//   tidepool --batch [training options]   train headless, write a run folder
//   tidepool models                       the model zoo, with sizes
//   tidepool plan --model M ...           the dry-run planner's table
//   tidepool replay FILE                  an allocation trace through every heuristic
//
// Every failure a user can cause ends with "tidepool: error: <what>" on
// stderr and exit status 1 (2 for a malformed command line).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <set>

#include "app/batch_run.h"
#include "app/models_command.h"
#include "app/plan_command.h"
#include "app/replay_command.h"
#include "datasets/dataset.h"
#include "engine/memory/allocator.h"
#include "models/registry.h"
#ifdef TIDEPOOL_HAVE_GUI
#include "app/window_run.h"
#include "ui/scene/overlap.h"
#endif

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tidepool;
  app::RunOptions o;
  bool batch = false, quiet = false;

  CLI::App cli{"Tidepool: train CNNs under a GPU memory budget and see what the memory does."};
  cli.footer("models: " + joined(models::model_names()) +
             "\nrun `tidepool models` for their sizes; README.md for the details");
  cli.add_flag("--batch", batch, "train headless and write a run folder (no window)");
  cli.add_option("--model", o.model, "network to train")->capture_default_str();
  std::vector<std::string> dataset_names;
  for (auto n : datasets::dataset_names()) dataset_names.emplace_back(n);
  cli.add_option("--dataset", o.dataset, "dataset: " + joined(dataset_names))->capture_default_str();
  cli.add_option("--data", o.data_dir, "folder with the dataset's files (default for generated: data/generated)");
  cli.add_option("--batch-size", o.batch_size, "images per iteration")->capture_default_str();
  auto* epochs = cli.add_option("--epochs", o.epochs, "epochs to train (default 1)");
  cli.add_option("--iterations", o.iterations, "iterations to train instead of whole epochs")->excludes(epochs);
  cli.add_option("--lr", o.lr, "initial learning rate")->capture_default_str();
  cli.add_option("--lr-schedule", o.lr_schedule, "cosine, step or constant")->capture_default_str();
  cli.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  cli.add_option("--weight-decay", o.weight_decay, "SGD weight decay")->capture_default_str();
  cli.add_option("--seed", o.seed, "seed of initialisation, data order and dropout")->capture_default_str();
  cli.add_option("--device", o.device, "cpu or cuda")->capture_default_str();
  cli.add_option("--out", o.out, "run folder (default runs/<model>-<dataset>-<time>)");
  cli.add_option("--resume", o.resume, "continue the run in this folder from its checkpoint");
  cli.add_option("--heuristic", o.heuristic, "memory-pool heuristic: " + joined(allocator_names()))
      ->capture_default_str();
  cli.add_option("--algo", o.algo, "conv algorithm scheme: m (least workspace) or p (fastest)")
      ->capture_default_str();
  cli.add_option("--mode", o.mode,
                 "activation offload: base, all, conv, aconv, autoswap (as little as fits --budget) or dyn")
      ->capture_default_str();
  cli.add_option("--swap-score", o.swap_score, "autoswap's priority score: doa, aoa, wdoa or swdoa")
      ->capture_default_str();
  cli.add_option("--transfer", o.transfer, "sync (vDNN) or async (vDNN++) transfers")->capture_default_str();
  cli.add_option("--order", o.order, "backward allocation order: prefetch-first or derivative-first")
      ->capture_default_str();
  cli.add_option("--lookahead", o.lookahead, "prefetches kept in flight ahead of backward")->capture_default_str();
  cli.add_flag("--compress", o.compress,
               "zero-value compress offloaded tensors into pageable host memory (vDNN++); pinned memory "
               "shrinks to two staging slots");
  cli.add_option("--compress-threads", o.compress_threads,
                 "host threads that compress one offloaded tensor (0: a quarter of the cores)")
      ->capture_default_str();
  cli.add_option("--budget", o.budget, "memory pool size, e.g. 900MiB (default: what the run needs)");
  cli.add_option("--link-gbps", o.link_gbps, "cpu device: throttle host<->device copies to this GB/s (0 = off)")
      ->capture_default_str();
  cli.add_option("--trace-iterations", o.trace_iterations,
                 "iterations recorded in trace.json and memory_load.csv")->capture_default_str();
  cli.add_option("--stop-after", o.stop_after,
                 "stop after this many iterations, checkpointed, without changing the planned run "
                 "(continue with --resume)");
  cli.add_flag("--quiet", quiet, "no progress bar");

  std::string screenshot;
  int frames = 1, window_width = 1600, window_height = 900;
  bool fragmentation = false, overlap = false;
  auto* screenshot_opt = cli.add_option(
      "--screenshot", screenshot,
      "window: write the window as PNG after --frames frames showing live data, then exit");
  cli.add_option("--frames", frames, "window: frames to draw with live data before the screenshot")
      ->capture_default_str()
      ->needs(screenshot_opt);
  cli.add_option("--window-width", window_width, "window width in pixels")->capture_default_str();
  cli.add_option("--window-height", window_height, "window height in pixels")->capture_default_str();
  cli.add_flag("--fragmentation-scenario", fragmentation, "window: open the fragmentation teaching scenario");
  cli.add_flag("--overlap-scenario", overlap,
               "window: train the overlap teaching scenario (vdnn_constructed, every input offloaded, sync "
               "transfers on a throttled link)");

  auto* models_cmd = cli.add_subcommand("models", "list the models with parameter counts and activation memory");

  app::PlanRequest plan_request;
  auto* plan_cmd = cli.add_subcommand(
      "plan", "dry-run one iteration through every offload mode, conv scheme, order and heuristic");
  plan_cmd->add_option("--model", plan_request.model, "network")->capture_default_str();
  plan_cmd->add_option("--dataset", plan_request.dataset, "cifar10, cifar100 or imagenet (input size, classes)")
      ->capture_default_str();
  plan_cmd->add_option("--batch-size", plan_request.batch_size, "images per iteration")->capture_default_str();
  plan_cmd->add_option("--heuristic", plan_request.heuristic, "one heuristic only (default: all)");
  plan_cmd->add_option("--transfer", plan_request.transfer,
                       "sync or async (async parks offloaded blocks where the pool has room)")
      ->capture_default_str();
  plan_cmd->add_option("--budget", plan_request.budget,
                       "also AutoSwap's rows: as little offloaded as fits this pool, e.g. 300MiB");
  plan_cmd->add_flag("--compress", plan_request.compress,
                     "compressed offloads: the pinned column is their two staging slots");
  plan_cmd->add_flag("--json", plan_request.json, "a JSON list of result objects");

  std::string trace_file;
  auto* replay_cmd = cli.add_subcommand("replay", "run an allocation trace (CSV) through every heuristic");
  replay_cmd->add_option("file", trace_file, "CSV of alloc/free events (format: README.md)")->required();

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  o.progress = !quiet;

  try {
    if (*models_cmd) {
      app::print_models(std::cout);
      return 0;
    }
    if (*plan_cmd) {
      app::plan_command(plan_request, std::cout);
      return 0;
    }
    if (*replay_cmd) return app::replay_command(trace_file, std::cout);
    if (batch) {  // the window's options would otherwise be ignored without a word
      for (const auto& [set, name] : {std::pair{!screenshot.empty(), "--screenshot"},
                                      std::pair{fragmentation, "--fragmentation-scenario"},
                                      std::pair{overlap, "--overlap-scenario"}})
        if (set) throw std::invalid_argument(std::string(name) + " is for the window: leave out --batch");
    }
    if (!batch) {
      if (!o.resume.empty()) throw std::invalid_argument("--resume continues a --batch run: add --batch");
#ifdef TIDEPOOL_HAVE_GUI
      if (frames < 1) throw std::invalid_argument("--frames must be at least 1");
      if (window_width < 320 || window_height < 240)
        throw std::invalid_argument("the window must be at least 320x240 pixels");
      ui::WindowOptions window;
      window.width = window_width;
      window.height = window_height;
      window.screenshot = screenshot;
      window.frames = frames;
      window.show_fragmentation = fragmentation;
      window.overlap_scenario = overlap;
      if (overlap) {
        const ui::MemorySettings s = ui::overlap_settings(
            {}, TransferMode::sync, o.link_gbps > 0 ? o.link_gbps : ui::OverlapScenario::first_link_gbps);
        o.model = ui::OverlapScenario::model;
        o.batch_size = ui::OverlapScenario::batch;
        o.mode = to_string(s.mode);
        o.transfer = to_string(s.transfer);
        o.lookahead = s.lookahead;
        o.link_gbps = s.link_gbps;
      }
      window.title = "Tidepool: " + o.model + " on " + o.dataset;
      return app::run_window(o, window);
#else
      std::fprintf(stderr,
                   "tidepool: error: this build has no window (it was configured without Dear ImGui and "
                   "GLFW: run scripts/install-deps.sh and reconfigure); train headless with --batch\n");
      return 1;
#endif
    }
    std::optional<app::Checkpoint> checkpoint;
    if (!o.resume.empty()) {
      checkpoint = app::load_checkpoint(std::filesystem::path(o.resume) / "checkpoint.bin");
      std::set<std::string> given;
      for (const char* name : {"model", "dataset", "batch-size", "epochs", "iterations", "data", "out"})
        if (cli.count(std::string("--") + name)) given.insert(name);
      const std::int64_t stop_after = o.stop_after;
      o = app::resume_options(o, given, *checkpoint, o.resume);
      o.stop_after = stop_after;
    }
    app::run_batch(o, checkpoint);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\ntidepool: error: %s\n", e.what());
    return 1;
  }
}
