#include "app/cli.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <set>
#include <type_traits>

#include "app/batch_run.h"
#include "app/models_command.h"
#include "app/plan_command.h"
#include "app/profile_command.h"
#include "app/ranks.h"
#include "app/spelling.h"
#include "app/tune_command.h"
#include "engine/perf/spec_profiles.h"
#include "app/replay_command.h"
#include "app/view_command.h"
#include "datasets/dataset.h"
#include "engine/core/bytes_text.h"
#include "engine/memory/allocator.h"
#include "models/registry.h"
#include "app/window_ranks.h"
#include "ui/scene/overlap.h"
#ifdef TIDEPOOL_HAVE_GUI
#include "app/window_run.h"
#endif

namespace tidepool::app {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// An option whose words come from an enum's table (engine/core/choices.h):
// the help lists them, and a word outside them is refused naming the valid
// ones.
template <HasChoices E>
CLI::Option* add_choice(CLI::App& cli, const std::string& flag, E& value, const std::string& what,
                        const std::string& help) {
  return cli
      .add_option_function<std::string>(
          flag,
          [&value, what](const std::string& text) {
            try {
              value = parse_choice<E>(text, what);
            } catch (const std::invalid_argument& e) {
              std::vector<std::string> names;
              for (const Choice<E>& c : choices(E{})) names.emplace_back(c.name);
              const std::string guess = closest(text, names);
              if (guess.empty()) throw;
              throw std::invalid_argument(std::string(e.what()) + "; did you mean '" + guess + "'?");
            }
          },
          help + ": " + choice_help<E>())
      ->default_str(to_string(value))
      ->type_name("WORD");
}

CLI::Option* add_size(CLI::App& cli, const std::string& flag, std::size_t& bytes, const std::string& help) {
  return cli
      .add_option_function<std::string>(
          flag,
          [&bytes, flag](const std::string& text) {
            try {
              bytes = parse_bytes(text);
            } catch (const std::invalid_argument& e) {
              throw CLI::ValidationError(flag, e.what());
            }
          },
          help)
      ->type_name("SIZE");
}

// Ranges of the numeric options beyond "at least": a batch of a million
// images is far beyond any device's memory and keeps the plan's byte
// counts well inside 64 bits; a million epochs keeps the iteration count
// there too; more compression threads than 256 only wait for each other;
// a window's side from what ImGui can lay out to what a GPU can draw.
constexpr std::int64_t kMostBatch = 1 << 20, kMostEpochs = 1'000'000;
constexpr int kMostRanks = 1 << 16;  // more processes than any MPI job this tool will see
constexpr int kMostCompressThreads = 256;
constexpr int kLeastWidth = 320, kLeastHeight = 240, kMostWindow = 16384;

template <typename T>
std::string number_text(T v) {
  if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    char text[40];  // enough digits to read back the same value
    std::snprintf(text, sizeof text, "%.*g", std::is_same_v<T, float> ? 9 : 17, static_cast<double>(v));
    return text;
  }
}

// The one check of every numeric option: its text must be a decimal number
// of the option's type, finite, from `least` to `most`, or the command line
// is refused naming the option and the text ("--lr: must be a finite number,
// not nan"; CLI11 adds the option's name). The number is handed on in
// canonical form, because CLI11's own conversion reads "010" as octal,
// "-1" as 2^64 - 1 for an unsigned option and saturates on overflow: what
// it converts is then exactly what was checked.
template <typename T>
CLI::Validator number(T least, T most = std::numeric_limits<T>::max()) {
  const bool bounded = most != std::numeric_limits<T>::max();
  return CLI::Validator(
      [least, most](std::string& text) -> std::string {
        const char* first = text.data() + (text.size() > 1 && text[0] == '+');  // from_chars takes no '+'
        const char* end = text.data() + text.size();
        T v{};
        const auto [stop, error] = std::from_chars(first, end, v);
        if (error == std::errc::result_out_of_range)
          return text + (std::is_integral_v<T>       ? " is too large a number"
                         : std::is_same_v<T, float> ? " is outside a 32-bit float's range"
                                                    : " is outside a double's range");
        if (std::is_unsigned_v<T> && !text.empty() && text[0] == '-')
          return "must be at least " + number_text(least) + ", not " + text;
        if (error != std::errc() || stop != end)
          return std::string("must be ") + (std::is_integral_v<T> ? "a whole number" : "a number") + ", not " + text;
        if constexpr (std::is_floating_point_v<T>)
          if (!std::isfinite(v)) return "must be a finite number, not " + text;
        if (v < least) return "must be at least " + number_text(least) + ", not " + text;
        if (v > most) return "must be at most " + number_text(most) + ", not " + text;
        text = number_text(v);
        return {};
      },
      bounded                                    ? number_text(least) + " to " + number_text(most)
      : least == std::numeric_limits<T>::lowest() ? std::string()  // any (a seed)
                                                  : "at least " + number_text(least));
}

// The window's options, and whether any was given (they mean nothing with --batch).
struct WindowRequest {
  std::string screenshot;
  int frames = 1, width = 1600, height = 900;
  int show_rank = 0;
  bool fragmentation = false, overlap = false;
  bool given() const { return !screenshot.empty() || fragmentation || overlap || show_rank > 0; }
};

// The window; under mpirun (`ranks`) rank 0 opens it and the other ranks
// follow its turns headless (app/window_ranks.h), so only rank 0 needs a
// display.
int run_window_command(RunSettings settings, const WindowRequest& w, Communicator* ranks) {
  if (!settings.resume.empty()) throw std::invalid_argument("--resume continues a --batch run: add --batch");
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
  ui::WindowOptions window;
  window.width = w.width;
  window.height = w.height;
  window.screenshot = w.screenshot;
  window.frames = w.frames;
  window.show_fragmentation = w.fragmentation;
  window.overlap_scenario = w.overlap;
  window.show_rank = w.show_rank;
  window.title = "Tidepool: " + settings.model + " on " + settings.dataset;
  return run_window(settings, window, ranks);
#else
  std::fprintf(stderr,
               "tidepool: error: this build has no window (it was configured without Dear ImGui and GLFW: run "
               "scripts/install-deps.sh and reconfigure); train headless with --batch\n");
  return 1;
#endif
}

// What a training run is given: RunSettings, each option once.
void add_training_options(CLI::App& cli, RunSettings& s) {
  MemorySettings& m = s.memory;
  cli.add_option("--model", s.model, "network to train")->capture_default_str();
  add_choice(cli, "--fuse", s.fuse, "fusion", "layers computed in one pass");
  std::vector<std::string> dataset_names;
  for (auto n : datasets::dataset_names()) dataset_names.emplace_back(n);
  cli.add_option("--dataset", s.dataset, "dataset: " + joined(dataset_names))->capture_default_str();
  cli.add_option("--data", s.data_dir, "folder with the dataset's files (default: data/generated for generated, "
                 "/usr/share/datasets/fashion-mnist for fashion-mnist)");
  cli.add_option("--batch-size", s.batch_size, "images per iteration")
      ->capture_default_str()
      ->transform(number<std::int64_t>(1, kMostBatch));
  auto* epochs =
      cli.add_option("--epochs", s.epochs, "epochs to train (default 1)")->transform(number<std::int64_t>(1, kMostEpochs));
  cli.add_option("--iterations", s.iterations, "iterations to train instead of whole epochs")
      ->excludes(epochs)
      ->transform(number<std::int64_t>(1));
  cli.add_option("--lr", s.lr, "initial learning rate")->capture_default_str()->transform(number(0.0f));
  add_choice(cli, "--lr-schedule", s.lr_schedule, "learning-rate schedule", "learning-rate schedule");
  cli.add_option("--momentum", s.momentum, "SGD momentum")->capture_default_str()->transform(number(0.0f, 1.0f));
  cli.add_option("--weight-decay", s.weight_decay, "SGD weight decay")->capture_default_str()->transform(number(0.0f));
  cli.add_option("--seed", s.seed, "seed of initialisation, data order and dropout")
      ->capture_default_str()
      ->transform(number<std::uint64_t>(0));
  add_choice(cli, "--device", s.device, "device", "device");
  cli.add_option("--profile", s.profile,
                 "sim device: the performance profile it runs on, a file from `tidepool profile` or a GPU "
                 "specification (" + gpu_spec_names() + ")");
  cli.add_option("--out", s.out, "run folder (default runs/<model>-<dataset>-<time>)");
  cli.add_option("--resume", s.resume, "continue the run in this folder from its checkpoint");
  cli.add_flag("--force", s.force,
               "with --out: replace the run that folder holds (its files are removed once the new run has passed "
               "every check; a folder holding other files is never emptied)");
  cli.add_option("--heuristic", m.heuristic, "memory-pool heuristic: " + joined(allocator_names()))
      ->capture_default_str();
  add_choice(cli, "--algo", m.scheme, "conv algorithm scheme", "conv algorithm scheme");
  add_choice(cli, "--precision", m.precision, "precision", "what activations and their gradients are stored in");
  add_choice(cli, "--mode", m.mode, "offload mode", "activation offload");
  add_choice(cli, "--swap-score", m.swap_score, "swap score", "autoswap's priority score");
  add_choice(cli, "--transfer", m.transfer, "transfer semantics", "transfers");
  add_choice(cli, "--order", m.order, "allocation order", "backward allocation order");
  cli.add_option("--lookahead", m.lookahead, "prefetches kept in flight ahead of backward")
      ->capture_default_str()
      ->transform(number(0));
  cli.add_flag("--compress", m.compress,
               "zero-value compress offloaded tensors into pageable host memory (vDNN++); pinned memory "
               "shrinks to two staging slots");
  cli.add_option("--compress-threads", s.compress_threads,
                 "host threads that compress one offloaded tensor (0: a quarter of the cores)")
      ->capture_default_str()
      ->transform(number(0, kMostCompressThreads));
  add_size(cli, "--budget", m.budget_bytes, "memory pool size, e.g. 900MiB (default: what the run needs)");
  add_size(cli, "--bucket-size", m.bucket_bytes,
           "under mpirun: gradients are all-reduced in buckets of this size as backward produces them (default "
           "1MiB)");
  cli.add_flag("--sync-bn", m.sync_bn,
               "under mpirun: batch norm normalises with the mean and variance of the whole global batch, its "
               "per-channel sums all-reduced in every forward and backward (PyTorch's SyncBatchNorm); without it "
               "each rank uses its own part of the batch. On one process it changes nothing");
  cli.add_option("--link-gbps", m.link_gbps, "cpu device: throttle host<->device copies to this GB/s (0 = off)")
      ->capture_default_str()
      ->transform(number(0.0));
  add_choice(cli, "--host-memory", m.host_memory, "host memory", "where offloads wait on the host (Zhuang)");
  add_choice(cli, "--copy-engine", m.copy_engine, "copy engine", "who copies offloads and prefetches (Zhuang)");
  cli.add_option("--trace-iterations", s.trace_iterations,
                 "iterations recorded in trace.json, memory_load.csv and events.bin")
      ->capture_default_str()
      ->transform(number<std::int64_t>(0));
  cli.add_option("--stop-after", s.stop_after,
                 "stop after this many iterations, checkpointed, without changing the planned run "
                 "(continue with --resume)")
      ->transform(number<std::int64_t>(1));
  cli.add_option("--checkpoint-every", s.checkpoint_every,
                 "also checkpoint every N iterations within an epoch, so that a kill loses at most N "
                 "(0: only at epoch ends and stops; default: every 5 minutes)")
      ->type_name("N")
      ->transform(number<std::int64_t>(0));
}

void add_window_options(CLI::App& cli, WindowRequest& window) {
  auto* screenshot = cli.add_option("--screenshot", window.screenshot,
                                    "window: write the window as PNG after --frames frames showing live data, then exit");
  cli.add_option("--frames", window.frames, "window: frames to draw with live data before the screenshot")
      ->capture_default_str()
      ->needs(screenshot)
      ->transform(number(1));
  cli.add_option("--window-width", window.width, "window width in pixels")
      ->capture_default_str()
      ->transform(number(kLeastWidth, kMostWindow));
  cli.add_option("--window-height", window.height, "window height in pixels")
      ->capture_default_str()
      ->transform(number(kLeastHeight, kMostWindow));
  cli.add_flag("--fragmentation-scenario", window.fragmentation, "window: open the fragmentation teaching scenario");
  cli.add_option("--show-rank", window.show_rank,
                 "window under mpirun: the rank whose timeline, address map and memory load the views show first "
                 "(the Rank menu changes it)")
      ->check(CLI::NonNegativeNumber);
  cli.add_flag("--overlap-scenario", window.overlap,
               "window: train the overlap teaching scenario (vdnn_constructed, every input offloaded, sync "
               "transfers on a throttled link)");
}

CLI::App* add_plan_command(CLI::App& cli, PlanRequest& plan) {
  auto* cmd = cli.add_subcommand("plan", "dry-run one iteration through every offload mode, conv scheme, order and heuristic");
  cmd->add_option("--model", plan.model, "network")->capture_default_str();
  add_choice(*cmd, "--fuse", plan.fuse, "fusion", "layers computed in one pass");
  cmd->add_option("--dataset", plan.dataset, "cifar10, cifar100, fashion-mnist or imagenet (input size, classes)")->capture_default_str();
  cmd->add_option("--batch-size", plan.batch_size, "images per iteration")
      ->capture_default_str()
      ->transform(number<std::int64_t>(1, kMostBatch));
  cmd->add_option("--heuristic", plan.heuristic, "one heuristic only (default: all)");
  add_choice(*cmd, "--transfer", plan.transfer, "transfer semantics",
             "transfers (async parks offloaded blocks where the pool has room)");
  add_size(*cmd, "--budget", plan.budget_bytes, "also AutoSwap's rows: as little offloaded as fits this pool");
  cmd->add_option("--profile", plan.profile,
                  "a performance profile (a file, or " + gpu_spec_names() +
                      "): also AccUDNN's rows, and every row's predicted iteration time and stall");
  cmd->add_flag("--compress", plan.compress, "compressed offloads: the pinned column is their two staging slots");
  add_choice(*cmd, "--host-memory", plan.host_memory, "host memory",
             "where offloads wait (pageable: a pageable column, and pinned is the staging buffers)");
  cmd->add_option_function<std::vector<std::string>>(
         "--precision",
         [&plan](const std::vector<std::string>& words) {
           plan.precisions.clear();
           for (const std::string& w : words) plan.precisions.push_back(parse_choice<Precision>(w, "precision"));
         },
         "a set of rows for each of these precisions: " + choice_help<Precision>() + " (default fp32)")
      ->type_name("WORD ...");
  cmd->add_option("--ranks", plan.ranks,
                  "plan one rank of a data-parallel run of this many (--batch-size is the global batch)")
      ->capture_default_str()
      ->transform(number(1, kMostRanks));
  add_size(*cmd, "--bucket-size", plan.bucket_bytes, "with --ranks: the gradient buckets' size (default 1MiB)");
  cmd->add_flag("--json", plan.json, "a JSON list of result objects");
  return cmd;
}

// profile and tune: the network a profile is measured on, and the device
// and link it is measured with.
void add_measuring_options(CLI::App& cmd, std::string& model, Fusion& fuse, std::string& dataset, DeviceKind& device,
                           double& link_gbps, const std::string& device_help) {
  cmd.add_option("--model", model, "network")->capture_default_str();
  add_choice(cmd, "--fuse", fuse, "fusion", "the network as a run with this --fuse builds it");
  cmd.add_option("--dataset", dataset, "its input shapes: cifar10, cifar100, fashion-mnist or imagenet")
      ->capture_default_str();
  add_choice(cmd, "--device", device, "device", device_help);
  cmd.add_option("--link-gbps", link_gbps, "cpu device: throttle its host link while measuring (0 = off)")
      ->capture_default_str()
      ->transform(number(0.0));
}

CLI::App* add_profile_command(CLI::App& cli, ProfileRequest& q) {
  auto* cmd = cli.add_subcommand(
      "profile", "measure a device's performance profile (per-layer times at five batch sizes, fitted), or derive "
                 "one from a GPU specification, for --device sim and the AccUDNN planner");
  add_measuring_options(*cmd, q.model, q.fuse, q.dataset, q.device, q.link_gbps, "device to measure");
  cmd->add_option("--batch-size", q.batch_size, "the largest batch profiled (also 1/8, 1/4, 1/2 and 2/3 of it)")
      ->capture_default_str()
      ->transform(number<std::int64_t>(1, kMostBatch));
  add_choice(*cmd, "--algo", q.scheme, "conv algorithm scheme", "conv algorithm scheme to measure (as the runs it drives)");
  cmd->add_option("--iterations", q.iterations, "timed iterations per batch size (the median is kept)")
      ->capture_default_str()
      ->transform(number(1, 1000));
  cmd->add_option("--spec", q.spec, "derive the profile from a GPU specification instead: " + gpu_spec_names());
  cmd->add_option("-o,--out", q.out, "the profile JSON to write")->required();
  return cmd;
}

CLI::App* add_tune_command(CLI::App& cli, TuneRequest& q) {
  auto* cmd = cli.add_subcommand(
      "tune", "AccUDNN's efficiency-optimal batch under a budget: the largest batch without offload, k_max, "
              "Algorithm 2's candidates, k* with its swap strategy, and eq. 9's learning rate");
  add_measuring_options(*cmd, q.model, q.fuse, q.dataset, q.device, q.link_gbps,
                        "device to measure on when no --profile is given");
  add_size(*cmd, "--budget", q.memory.budget_bytes, "the memory budget the batch must fit (required)")->required();
  cmd->add_option("--profile", q.profile,
                  "the performance profile (a file, or " + gpu_spec_names() +
                      "); default: measure one now on --device at 1/8 ... 1 of k_max");
  cmd->add_option("--heuristic", q.memory.heuristic, "memory-pool heuristic")->capture_default_str();
  add_choice(*cmd, "--algo", q.memory.scheme, "conv algorithm scheme", "conv algorithm scheme");
  cmd->add_option("--lr", q.base_lr, "a learning rate that trains well at --batch-size (eq. 9 adapts it to k*)")
      ->capture_default_str()
      ->transform(number(0.0));
  cmd->add_option("--batch-size", q.base_batch, "the batch --lr is for")
      ->capture_default_str()
      ->transform(number<std::int64_t>(1, kMostBatch));
  cmd->add_option("--lr-convexity", q.convexity,
                  "eq. 9's c (default from the paper's ResNet-101 figure: lr 0.1 at 256 becomes 0.22 at 592)")
      ->capture_default_str()
      ->transform(number(1e-9, 1e9));
  cmd->add_flag("--json", q.json, "one JSON object");
  return cmd;
}

CLI::App* add_view_command(CLI::App& cli, ViewRequest& view, std::string& folder) {
  auto* cmd = cli.add_subcommand(
      "view", "open a --batch run folder in the window, read only: its traced iterations in every view");
  cmd->add_option("folder", folder, "a run folder written by --batch (it holds events.bin)")->required();
  auto* screenshot =
      cmd->add_option("--screenshot", view.screenshot, "write the window as PNG after --frames frames, then exit");
  cmd->add_option("--frames", view.frames, "frames to draw before the screenshot")
      ->capture_default_str()
      ->needs(screenshot)
      ->transform(number(1));
  cmd->add_option("--window-width", view.width, "window width in pixels")
      ->capture_default_str()
      ->transform(number(kLeastWidth, kMostWindow));
  cmd->add_option("--window-height", view.height, "window height in pixels")
      ->capture_default_str()
      ->transform(number(kLeastHeight, kMostWindow));
  return cmd;
}

}  // namespace

namespace {

// What a word CLI11 did not expect was probably meant to be: an option of
// the command or its subcommands ("--modle"), or a subcommand ("veiw").
std::string misspelt(const CLI::App& cli, const std::string& word) {
  std::vector<std::string> candidates;
  if (word.rfind("-", 0) == 0) {
    auto add_options = [&](const CLI::App& app) {
      for (const CLI::Option* o : app.get_options())
        for (const std::string& name : o->get_lnames()) candidates.push_back("--" + name);
    };
    add_options(cli);
    for (const CLI::App* sub : cli.get_subcommands({})) add_options(*sub);
  } else {
    for (const CLI::App* sub : cli.get_subcommands({})) candidates.push_back(sub->get_name());
  }
  return closest(word, candidates);
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App cli{"Tidepool: train CNNs under a GPU memory budget and see what the memory does."};
  cli.footer("models: " + joined(models::model_names()) +
             "\nrun `tidepool models` for their sizes; README.md for the details");
  RunSettings s;
  bool batch = false, quiet = false, tune_run_flag = false;
  cli.add_flag("--batch", batch, "train headless and write a run folder (no window)");
  add_training_options(cli, s);
  cli.add_flag("--tune", tune_run_flag,
               "with --batch and --budget: train at AccUDNN's efficiency-optimal batch, with eq. 9's learning rate "
               "for it and mode accudnn (profiled first unless --profile is given)");
  cli.add_flag("--quiet", quiet, "no progress bar");
  WindowRequest window;
  add_window_options(cli, window);

  auto* models_cmd = cli.add_subcommand("models", "list the models with parameter counts and activation memory");
  PlanRequest plan;
  auto* plan_cmd = add_plan_command(cli, plan);
  std::string trace_file;
  auto* replay_cmd = cli.add_subcommand("replay", "run an allocation trace (CSV) through every heuristic");
  replay_cmd->add_option("file", trace_file, "CSV of alloc/free events (format: README.md)")->required();
  ProfileRequest profile;
  auto* profile_cmd = add_profile_command(cli, profile);
  TuneRequest tune;
  auto* tune_cmd = add_tune_command(cli, tune);
  ViewRequest view;
  std::string view_folder;
  auto* view_cmd = add_view_command(cli, view, view_folder);

  std::unique_ptr<Communicator> ranks;  // outlives the try: an error stops the other ranks too
  try {
    try {
      cli.parse(argc, argv);
    } catch (const CLI::ValidationError& e) {  // a value out of range: the user's error like any other
      std::fprintf(stderr, "tidepool: error: %s\n", e.what());
      return 1;
    } catch (const CLI::ParseError& e) {
      // A malformed command line: CLI11's words, a guess at what was meant,
      // and status 2 as getopt and argparse tools give (--help: 0).
      if (cli.exit(e) == 0) return 0;
      for (const std::string& word : cli.remaining(true)) {  // with the subcommands' leftovers
        const std::string guess = misspelt(cli, word);
        if (!guess.empty()) std::fprintf(stderr, "tidepool: '%s': did you mean '%s'?\n", word.c_str(), guess.c_str());
      }
      return 2;
    }
    s.progress = !quiet;
    if (*models_cmd) {
      print_models(std::cout);
      return 0;
    }
    if (*plan_cmd) {
      plan_command(plan, std::cout);
      return 0;
    }
    if (*replay_cmd) return replay_command(trace_file, std::cout);
    if (*tune_cmd) {
      tune.progress = !quiet;
      return tune_command(tune, std::cout);
    }
    if (*profile_cmd) {
      profile.progress = !quiet;
      return profile_command(profile, std::cout);
    }
    if (*view_cmd) {
      view.folder = view_folder;
      return view_command(view);
    }
    if (tune_run_flag && !batch) throw std::invalid_argument("--tune is for --batch runs (the window's batch is chosen when it starts)");
    // Under mpirun: the ranks of a data-parallel run (app/ranks.h).
    ranks = join_ranks();
    if (ranks && tune_run_flag)
      throw std::invalid_argument("--tune profiles one process; under mpirun, give the batch it chose with --batch-size");
    if (ranks && ranks->rank() > 0) {
      // Rank 0 speaks for the run; the others say only what went wrong (stderr).
      s.progress = false;
      if (!std::freopen("/dev/null", "w", stdout)) throw std::runtime_error("cannot silence rank " + std::to_string(ranks->rank()));
    }
    if (!batch) return run_window_command(s, window, ranks.get());
    if (window.given()) {  // the window's options would otherwise be ignored without a word
      const char* name = !window.screenshot.empty() ? "--screenshot"
                         : window.fragmentation     ? "--fragmentation-scenario"
                         : window.overlap           ? "--overlap-scenario"
                                                    : "--show-rank";
      throw std::invalid_argument(std::string(name) + " is for the window: leave out --batch");
    }
    std::optional<Checkpoint> checkpoint;
    if (!s.resume.empty()) {
      checkpoint = load_checkpoint_on_ranks(std::filesystem::path(s.resume) / "checkpoint.bin", ranks.get());
      std::set<std::string> given;  // every run option on the command line, by its long name
      for (const CLI::Option* option : cli.get_options())
        if (option->count() > 0 && !option->get_lnames().empty()) given.insert(option->get_lnames().front());
      s = resume_settings(s, given, *checkpoint, s.resume);
    }
    if (tune_run_flag) {
      if (checkpoint)
        throw std::invalid_argument("--tune decided this run's batch when it started; resume it without --tune");
      const TunedRun tuned = tune_run(s);
      run_batch(tuned.settings, std::nullopt, tuned.decision, nullptr, tuned.measured ? &*tuned.measured : nullptr);
      return 0;
    }
    run_batch(s, checkpoint, nullptr, ranks.get());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\ntidepool: %serror: %s\n", rank_prefix(ranks.get()).c_str(), e.what());
    std::fflush(stderr);
    stop_all_ranks(ranks.get(), 1);  // the others may be waiting for this one
    return 1;
  }
}

}  // namespace tidepool::app
