#include "app/batch_run.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/device_factory.h"
#include "app/lr_schedule.h"
#include "app/progress.h"
#include "app/settings_text.h"
#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "engine/dyn_mode.h"
#include "engine/events.h"
#include "engine/sinks/chrome_trace_writer.h"
#include "engine/sinks/iteration_filter.h"
#include "engine/sinks/memory_load_csv_writer.h"
#include "engine/trainer.h"
#include "models/registry.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string default_run_folder(const RunOptions& o) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return (fs::path("runs") / (o.model + "-" + o.dataset + "-" + stamp)).string();
}

void write_json_atomically(const fs::path& file, const nlohmann::json& j) {
  fs::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << j.dump(2) << '\n';
    if (!out) throw std::runtime_error("writing " + tmp.string() + " failed");
  }
  fs::rename(tmp, file);
}

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

struct Evaluation {
  double loss = 0, accuracy = 0, top5 = 0;
  std::int64_t images = 0;
};

Evaluation evaluate(Trainer& trainer, datasets::BatchLoader& loader) {
  Evaluation e;
  std::int64_t correct = 0, correct5 = 0;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    if (batch->size == 0) continue;
    const IterationResult r = trainer.eval_step(batch->images, batch->labels, batch->size);
    correct += r.correct;
    correct5 += r.correct_top5;
    e.loss += static_cast<double>(r.loss) * batch->size;
    e.images += batch->size;
  }
  if (e.images) {
    e.loss /= e.images;
    e.accuracy = static_cast<double>(correct) / e.images;
    e.top5 = static_cast<double>(correct5) / e.images;
  }
  return e;
}

}  // namespace

RunOptions resume_options(const RunOptions& cli, const std::set<std::string>& given,
                          const Checkpoint& saved, const std::string& folder) {
  RunOptions o = saved.options;
  auto must_match = [&](const char* name, const auto& mine, const auto& theirs) {
    if (given.count(name) && mine != theirs) {
      std::ostringstream msg;
      msg << "the checkpoint in " << folder << " is from a run with " << name << " " << theirs
          << ", not " << mine;
      throw CheckpointError(msg.str());
    }
  };
  must_match("model", cli.model, saved.options.model);
  must_match("dataset", cli.dataset, saved.options.dataset);
  must_match("batch-size", cli.batch_size, saved.options.batch_size);
  // What may change between the two halves of a run.
  if (given.count("epochs") || given.count("iterations")) {
    o.epochs = cli.epochs;
    o.iterations = cli.iterations;
  }
  if (given.count("data")) o.data_dir = cli.data_dir;
  o.out = given.count("out") ? cli.out : folder;
  o.resume = folder;
  o.progress = cli.progress;
  return o;
}

nlohmann::json run_batch(const RunOptions& o, const std::optional<Checkpoint>& resume) {
  const auto wall_start = Clock::now();
  if (o.batch_size <= 0) throw std::invalid_argument("--batch-size must be at least 1");
  if (o.epochs < 0 || o.iterations < 0) throw std::invalid_argument("--epochs and --iterations must not be negative");
  learning_rate(o.lr_schedule, o.lr, 0, 1);  // validates the schedule name
  PlanSettings memory;
  memory.scheme = parse_scheme(o.algo);
  const bool dyn = o.mode == "dyn";
  const std::size_t budget = o.budget.empty() ? 0 : parse_bytes(o.budget);
  // dyn under a budget starts from the mode that needs least memory and
  // profiles from there; with no budget, keeping everything always fits.
  memory.mode = dyn ? (budget ? OffloadMode::all : OffloadMode::base) : parse_mode(o.mode);
  memory.transfer = parse_transfer(o.transfer);
  memory.order = parse_order(o.order);
  memory.lookahead = o.lookahead;

  // Data first: a wrong path should fail before anything slow happens.
  const bool imagenet = o.dataset == "imagenet";
  std::string data_dir = o.data_dir;
  if (data_dir.empty()) {
    if (o.dataset != "generated")
      throw std::invalid_argument("--dataset " + o.dataset + " needs --data DIR (the folder with its files)");
    data_dir = "data/generated";
  }
  auto train_set = datasets::make_dataset(o.dataset, data_dir, datasets::Split::train);
  auto test_set = datasets::make_dataset(o.dataset, data_dir, datasets::Split::test);
  const auto input = imagenet ? models::InputKind::imagenet : models::InputKind::cifar;
  const Network net = models::make_model(o.model, input, train_set->classes());

  const fs::path out = o.out.empty() ? fs::path(default_run_folder(o)) : fs::path(o.out);
  fs::create_directories(out);

  const auto train_opts = datasets::LoaderOptions::training(o.batch_size, o.seed);
  const auto eval_opts = datasets::LoaderOptions::evaluation(o.batch_size);
  // Both loaders' slots sit in the device's pinned region.
  const std::size_t train_bytes = (datasets::BatchLoader::required_bytes(*train_set, train_opts) + 63) / 64 * 64;
  const std::size_t eval_bytes = datasets::BatchLoader::required_bytes(*test_set, eval_opts);

  auto device = make_device(o.device, o.link_gbps);
  TrainerOptions topts;
  topts.batch = o.batch_size;
  topts.plan = memory;
  topts.heuristic = o.heuristic;
  topts.budget_bytes = budget;
  topts.seed = o.seed;
  topts.sgd = {o.lr, o.momentum, o.weight_decay};
  topts.staging_bytes = train_bytes + eval_bytes;

  ChromeTraceWriter trace((out / "trace.json").string());
  MemoryLoadCsvWriter load_csv((out / "memory_load.csv").string());
  FanOutSink files;
  files.add(trace);
  files.add(load_csv);
  IterationFilter sink(files, o.trace_iterations);

  Trainer trainer(*device, net, topts, &sink);
  datasets::BatchLoader train_loader(*train_set, trainer.staging().subspan(0, train_bytes), train_opts);
  datasets::BatchLoader test_loader(*test_set, trainer.staging().subspan(train_bytes, eval_bytes), eval_opts);

  const std::int64_t per_epoch = train_loader.batches_per_epoch();
  if (per_epoch == 0)
    throw std::invalid_argument("the training set (" + std::to_string(train_set->size()) +
                                " images) is smaller than one batch of " + std::to_string(o.batch_size));
  const std::int64_t epochs = o.iterations ? (o.iterations + per_epoch - 1) / per_epoch
                                           : std::max<std::int64_t>(o.epochs, 1);
  const std::int64_t total = o.iterations ? o.iterations : epochs * per_epoch;

  std::int64_t epoch = 0, skip = 0, iteration = 0;
  if (resume) {
    trainer.write_state(resume->state);
    epoch = resume->epoch;
    skip = resume->batch_in_epoch;
    iteration = resume->iteration;
    trainer.set_iteration(iteration);
    std::printf("resuming %s at epoch %lld, iteration %lld\n", out.string().c_str(),
                static_cast<long long>(epoch + 1), static_cast<long long>(iteration));
  }

  const fs::path metrics_path = out / "metrics.csv";
  const bool new_metrics = !resume || !fs::exists(metrics_path);
  std::ofstream metrics(metrics_path, new_metrics ? std::ios::trunc : std::ios::app);
  if (!metrics) throw std::runtime_error("cannot write " + metrics_path.string());
  if (new_metrics)
    metrics << "epoch,iteration,lr,train_loss,train_accuracy,test_loss,test_accuracy,test_top5,"
               "images_per_second,peak_load_bytes,footprint_bytes,seconds\n";

  std::printf("training %s (%lld parameters) on %s, batch %lld, %lld iterations; run folder %s\n",
              net.name().c_str(), static_cast<long long>(net.parameter_count()),
              train_set->name().c_str(), static_cast<long long>(o.batch_size),
              static_cast<long long>(total), out.string().c_str());
  auto print_memory = [&] {
    const Schedule& s = trainer.train_schedule();
    std::printf("memory pool: %s (peak load %s, smallest workable %s; %s, mode %s, algo %s, %s, %s); pinned %s\n",
                format_bytes(trainer.pool_bytes()).c_str(), format_bytes(s.peak_load_bytes).c_str(),
                format_bytes(trainer.minimum_budget()).c_str(), o.heuristic.c_str(), to_string(s.settings.mode),
                to_string(s.settings.scheme), to_string(s.settings.transfer), to_string(s.settings.order),
                format_bytes(s.pinned_bytes).c_str());
    std::fflush(stdout);
  };
  print_memory();
  bool choose_mode = dyn;

  Progress progress(o.progress);
  double train_seconds = 0;
  std::int64_t train_images = 0;
  std::size_t peak_load = 0, footprint = 0;
  Evaluation last_eval;
  double last_train_loss = 0;
  const std::int64_t start_iteration = iteration;
  const std::int64_t stop_at = o.stop_after ? std::min(total, iteration + o.stop_after) : total;
  while (iteration < stop_at) {
    const auto epoch_start = Clock::now();
    train_loader.start_epoch(epoch);
    std::int64_t b = 0, epoch_images = 0, epoch_correct = 0;
    double epoch_loss = 0, epoch_seconds = 0;
    float lr = o.lr;
    while (iteration < stop_at) {
      auto batch = train_loader.next();
      if (!batch) break;
      if (b < skip) {  // already trained before the checkpoint
        ++b;
        continue;
      }
      if (choose_mode) {  // dyn: profile the modes that fit on the first batch
        const DynChoice c = choose_dyn(trainer, batch->images, batch->labels);
        for (const auto& p : c.profiles)
          std::printf("dyn: %-5s %s\n", to_string(p.mode),
                      !p.fits ? "does not fit" : p.seconds > 0 ? (std::to_string(p.seconds) + " s/iteration").c_str() : "fits");
        std::printf("dyn: chose %s\n", to_string(c.mode));
        print_memory();
        choose_mode = false;
      }
      const auto t0 = Clock::now();
      lr = learning_rate(o.lr_schedule, o.lr, iteration, total);
      trainer.set_learning_rate(lr);
      const IterationResult r = trainer.train_step(batch->images, batch->labels);
      const double dt = seconds_since(t0);
      if (!std::isfinite(r.loss))
        throw std::runtime_error("training diverged: the loss is " + std::to_string(r.loss) +
                                 " at iteration " + std::to_string(iteration) +
                                 "; try a lower --lr (the last checkpoint is kept)");
      ++iteration, ++b;
      epoch_seconds += dt;
      epoch_images += batch->size;
      epoch_correct += r.correct;
      epoch_loss += static_cast<double>(r.loss) * batch->size;
      peak_load = std::max(peak_load, r.peak_load_bytes);
      footprint = std::max(footprint, r.footprint_bytes);
      const double rate = epoch_images / epoch_seconds;
      const double eta = (total - iteration) * static_cast<double>(o.batch_size) / rate;
      progress.update(epoch, epochs, iteration, total, r.loss, rate, eta);
    }
    skip = 0;
    const bool epoch_done = b == per_epoch;
    train_seconds += epoch_seconds;
    train_images += epoch_images;
    last_train_loss = epoch_images ? epoch_loss / epoch_images : 0;

    last_eval = evaluate(trainer, test_loader);
    char text[200];
    std::snprintf(text, sizeof text, "epoch %lld: train loss %.4f, accuracy %.2f%% | test loss %.4f, accuracy %.2f%%%s",
                  static_cast<long long>(epoch + 1), last_train_loss,
                  epoch_images ? 100.0 * epoch_correct / epoch_images : 0.0, last_eval.loss,
                  100.0 * last_eval.accuracy,
                  imagenet ? (", top-5 " + std::to_string(100.0 * last_eval.top5).substr(0, 5) + "%").c_str() : "");
    progress.line(text);
    metrics << epoch + 1 << ',' << iteration << ',' << lr << ',' << last_train_loss << ','
            << (epoch_images ? static_cast<double>(epoch_correct) / epoch_images : 0.0) << ','
            << last_eval.loss << ',' << last_eval.accuracy << ',' << last_eval.top5 << ','
            << (epoch_seconds > 0 ? epoch_images / epoch_seconds : 0.0) << ',' << peak_load << ','
            << footprint << ',' << seconds_since(epoch_start) << '\n';
    metrics.flush();

    Checkpoint c;
    c.options = o;
    c.epoch = epoch_done ? epoch + 1 : epoch;
    c.batch_in_epoch = epoch_done ? 0 : b;
    c.iteration = iteration;
    c.state = trainer.read_state();
    save_checkpoint(out / "checkpoint.bin", c);
    if (epoch_done) ++epoch;
  }
  if (start_iteration == stop_at) last_eval = evaluate(trainer, test_loader);  // nothing left to train
  sink.flush();
  if (iteration < total)
    std::printf("stopped after %lld of %lld iterations; continue with --resume %s\n",
                static_cast<long long>(iteration), static_cast<long long>(total), out.string().c_str());

  nlohmann::json summary = {
      {"model", o.model},
      {"dataset", o.dataset},
      {"device", device->caps().name},
      {"batch_size", o.batch_size},
      {"epochs", epochs},
      {"iterations", iteration},
      {"parameters", net.parameter_count()},
      {"final_test_accuracy", last_eval.accuracy},
      {"final_test_top5", last_eval.top5},
      {"final_test_loss", last_eval.loss},
      {"final_train_loss", last_train_loss},
      {"images_per_second", train_seconds > 0 ? train_images / train_seconds : 0.0},
      {"peak_load_bytes", peak_load},
      {"footprint_bytes", footprint},
      {"pool_bytes", trainer.pool_bytes()},
      {"mode", to_string(trainer.train_schedule().settings.mode)},
      {"transfer", o.transfer},
      {"order", o.order},
      {"pinned_host_bytes", trainer.train_schedule().pinned_bytes},
      {"heuristic", o.heuristic},
      {"algo", o.algo},
      {"param_checksum", hex(trainer.param_checksum())},
      {"skipped_images", train_set->skipped() + test_set->skipped()},
      {"wall_seconds", seconds_since(wall_start)},
  };
  write_json_atomically(out / "summary.json", summary);
  std::printf("done: test accuracy %.2f%%, %.1f images/s; %s\n", 100.0 * last_eval.accuracy,
              summary["images_per_second"].get<double>(), (out / "summary.json").string().c_str());
  return summary;
}

}  // namespace tidepool::app
