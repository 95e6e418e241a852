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

#include "app/progress.h"
#include "app/session.h"
#include "app/settings_text.h"
#include "engine/observe/events.h"
#include "engine/plan/planner.h"
#include "engine/observe/sinks/chrome_trace_writer.h"
#include "engine/observe/sinks/iteration_filter.h"
#include "engine/observe/sinks/memory_load_csv_writer.h"
#include "engine/observe/sinks/ring_sink.h"
#include "ui/png/run_pictures.h"

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

// A size as --budget reads it back exactly: whole MiB, or else bytes.
std::string budget_text(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  return bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + "MiB" : std::to_string(bytes);
}

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
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
  TrainingSession session(o);  // data and model first: a wrong path fails before anything slow
  const Network& net = session.network();

  const fs::path out = o.out.empty() ? fs::path(default_run_folder(o)) : fs::path(o.out);
  fs::create_directories(out);

  ChromeTraceWriter trace((out / "trace.json").string());
  MemoryLoadCsvWriter load_csv((out / "memory_load.csv").string());
  RingSink pictures;  // the same iterations, drawn as PNG at the end
  FanOutSink files;
  files.add(trace);
  files.add(load_csv);
  files.add(pictures);
  IterationFilter sink(files, o.trace_iterations);

  session.start(&sink);
  Trainer& trainer = session.trainer();
  if (resume) {
    session.restore(resume->state, resume->epoch, resume->batch_in_epoch, resume->iteration);
    std::printf("resuming %s at epoch %lld, iteration %lld\n", out.string().c_str(),
                static_cast<long long>(resume->epoch + 1), static_cast<long long>(resume->iteration));
  }
  const std::int64_t epochs = session.epochs(), total = session.total_iterations();

  const fs::path metrics_path = out / "metrics.csv";
  const bool new_metrics = !resume || !fs::exists(metrics_path);
  std::ofstream metrics(metrics_path, new_metrics ? std::ios::trunc : std::ios::app);
  if (!metrics) throw std::runtime_error("cannot write " + metrics_path.string());
  if (new_metrics)
    metrics << "epoch,iteration,lr,train_loss,train_accuracy,test_loss,test_accuracy,test_top5,"
               "images_per_second,peak_load_bytes,footprint_bytes,seconds\n";

  std::printf("training %s (%lld parameters) on %s, batch %lld, %lld iterations; run folder %s\n",
              net.name().c_str(), static_cast<long long>(net.parameter_count()),
              session.train_set().name().c_str(), static_cast<long long>(o.batch_size),
              static_cast<long long>(total), out.string().c_str());
  auto print_memory = [&] {
    const Schedule& s = trainer.train_schedule();
    std::printf("memory pool: %s (peak load %s, smallest workable %s; %s, mode %s, algo %s, %s, %s); pinned %s\n",
                format_bytes(trainer.pool_bytes()).c_str(), format_bytes(s.peak_load_bytes).c_str(),
                format_bytes(trainer.minimum_budget()).c_str(), o.heuristic.c_str(), to_string(s.settings.mode),
                to_string(s.settings.scheme), to_string(s.settings.transfer), to_string(s.settings.order),
                format_bytes(s.pinned_bytes).c_str());
    const int horizon = trainer.park_horizon();
    std::string parking;
    if (horizon == kParkUntilNeeded)
      parking = "the blocks they free stay parked until the pool needs the room, so forward reuses none of them "
                "while their copies run, and those still parked come back without a copy";
    else if (horizon > 0)
      parking = "up to " + std::to_string(horizon) +
                " blocks they free stay parked at once, so forward does not reuse them while their copies run";
    else if (s.pinned_bytes > 0 && s.settings.transfer == TransferMode::async)
      parking = "the pool has no room to park the blocks they free: forward reuses them at once and waits for "
                "their copies";
    if (!parking.empty() && trainer.parking_budget())
      parking += "; with --budget " + budget_text(trainer.parking_budget()) + " more are parked";
    if (!parking.empty()) std::printf("async offloads: %s\n", parking.c_str());
    if (s.settings.compress && s.pinned_bytes > 0) {
      PlanSettings uncompressed = s.settings;
      uncompressed.compress = false;
      const std::size_t plain = plan(net, o.batch_size, uncompressed, session.device().kernels()).pinned_bytes;
      if (s.pinned_bytes < plain)
        std::printf("compressed offloads: pinned %s (two staging slots) instead of %s; the host keeps the offloaded "
                    "tensors zero-value compressed in pageable memory, %d thread%s per tensor\n",
                    format_bytes(s.pinned_bytes).c_str(), format_bytes(plain).c_str(),
                    trainer.options().compress_threads, trainer.options().compress_threads == 1 ? "" : "s");
      else
        std::printf("compressed offloads: pinned %s (two staging slots of the largest offloaded tensor), more than the "
                    "%s this mode needs uncompressed: it offloads too little for compression to save pinned memory\n",
                    format_bytes(s.pinned_bytes).c_str(), format_bytes(plain).c_str());
    }
    std::fflush(stdout);
  };
  print_memory();

  const bool imagenet = o.dataset == "imagenet";
  Progress progress(o.progress);
  double train_seconds = 0;
  std::int64_t train_images = 0;
  std::size_t peak_load = 0, footprint = 0;
  Evaluation last_eval;
  double last_train_loss = 0;
  IterationResult last_compressed;  // the last iteration that compressed offloads
  const std::int64_t start_iteration = session.iteration();
  const std::int64_t stop_at = o.stop_after ? std::min(total, start_iteration + o.stop_after) : total;
  auto epoch_start = Clock::now();
  std::int64_t epoch_images = 0, epoch_correct = 0;
  double epoch_loss = 0, epoch_seconds = 0;
  float lr = o.lr;
  while (session.iteration() < stop_at) {
    const std::int64_t epoch = session.epoch();
    const StepReport r = session.train_iteration();
    if (r.dyn) {
      for (const auto& p : r.dyn->profiles)
        std::printf("dyn: %-5s %s\n", to_string(p.mode),
                    !p.fits ? "does not fit" : p.seconds > 0 ? (std::to_string(p.seconds) + " s/iteration").c_str() : "fits");
      std::printf("dyn: chose %s\n", to_string(r.dyn->mode));
      print_memory();
    }
    lr = r.lr;
    epoch_seconds += r.seconds;
    epoch_images += r.images;
    epoch_correct += r.result.correct;
    epoch_loss += static_cast<double>(r.result.loss) * r.images;
    peak_load = std::max(peak_load, r.result.peak_load_bytes);
    if (r.result.compressed_from_bytes) last_compressed = r.result;
    footprint = std::max(footprint, r.result.footprint_bytes);
    const double rate = epoch_images / epoch_seconds;
    const double eta = (total - session.iteration()) * static_cast<double>(o.batch_size) / rate;
    progress.update(epoch, epochs, session.iteration(), total, r.result.loss, rate, eta);
    if (!r.epoch_end && session.iteration() < stop_at) continue;

    // The end of an epoch, or of this invocation's slice: evaluate, log,
    // checkpoint.
    train_seconds += epoch_seconds;
    train_images += epoch_images;
    last_train_loss = epoch_images ? epoch_loss / epoch_images : 0;
    last_eval = session.evaluate();
    char text[200];
    std::snprintf(text, sizeof text, "epoch %lld: train loss %.4f, accuracy %.2f%% | test loss %.4f, accuracy %.2f%%%s",
                  static_cast<long long>(epoch + 1), last_train_loss,
                  epoch_images ? 100.0 * epoch_correct / epoch_images : 0.0, last_eval.loss,
                  100.0 * last_eval.accuracy,
                  imagenet ? (", top-5 " + std::to_string(100.0 * last_eval.top5).substr(0, 5) + "%").c_str() : "");
    progress.line(text);
    metrics << epoch + 1 << ',' << session.iteration() << ',' << lr << ',' << last_train_loss << ','
            << (epoch_images ? static_cast<double>(epoch_correct) / epoch_images : 0.0) << ','
            << last_eval.loss << ',' << last_eval.accuracy << ',' << last_eval.top5 << ','
            << (epoch_seconds > 0 ? epoch_images / epoch_seconds : 0.0) << ',' << peak_load << ','
            << footprint << ',' << seconds_since(epoch_start) << '\n';
    metrics.flush();

    Checkpoint c;
    c.options = o;
    c.epoch = session.epoch();
    c.batch_in_epoch = session.batch_in_epoch();
    c.iteration = session.iteration();
    c.state = trainer.read_state();
    save_checkpoint(out / "checkpoint.bin", c);
    epoch_start = Clock::now();
    epoch_images = epoch_correct = 0;
    epoch_loss = epoch_seconds = 0;
  }
  if (start_iteration == stop_at) last_eval = session.evaluate();  // nothing left to train
  sink.flush();
  const Schedule& last = trainer.train_schedule();
  ui::write_run_pictures(pictures.snapshot(), trainer.pool_bytes(), o.batch_size, out,
                         last.settings.mode == OffloadMode::autoswap ? last.settings.load_limit_bytes : 0);
  if (session.iteration() < total)
    std::printf("stopped after %lld of %lld iterations; continue with --resume %s\n",
                static_cast<long long>(session.iteration()), static_cast<long long>(total), out.string().c_str());

  const auto& train_set = session.train_set();
  const auto& test_set = session.test_set();
  nlohmann::json summary = {
      {"model", o.model},
      {"dataset", o.dataset},
      {"device", session.device().caps().name},
      {"batch_size", o.batch_size},
      {"epochs", epochs},
      {"iterations", session.iteration()},
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
      {"offloaded_bytes", trainer.train_schedule().offloaded_bytes()},
      {"load_limit_bytes", trainer.train_schedule().settings.load_limit_bytes},
      {"compress", trainer.train_schedule().settings.compress},
      {"compressed_from_bytes", last_compressed.compressed_from_bytes},
      {"compressed_to_bytes", last_compressed.compressed_to_bytes},
      {"compressed_held_bytes", last_compressed.compressed_held_bytes},
      {"compress_threads", trainer.options().compress_threads},
      {"parks_offloads", trainer.parks_offloads()},
      {"park_horizon", park_horizon_number(trainer.park_horizon())},
      {"heuristic", o.heuristic},
      {"algo", o.algo},
      {"param_checksum", hex(trainer.param_checksum())},
      {"skipped_images", train_set.skipped() + test_set.skipped()},
      {"wall_seconds", seconds_since(wall_start)},
  };
  if (last_compressed.compressed_from_bytes)
    std::printf("compressed offloads: the last iteration's %s took %s on the host (%.0f%% saved); the store holds %s\n",
                format_bytes(last_compressed.compressed_from_bytes).c_str(),
                format_bytes(last_compressed.compressed_to_bytes).c_str(),
                100.0 * (1.0 - static_cast<double>(last_compressed.compressed_to_bytes) /
                                   static_cast<double>(last_compressed.compressed_from_bytes)),
                format_bytes(last_compressed.compressed_held_bytes).c_str());
  write_json_atomically(out / "summary.json", summary);
  std::printf("done: test accuracy %.2f%%, %.1f images/s; %s\n", 100.0 * last_eval.accuracy,
              summary["images_per_second"].get<double>(), (out / "summary.json").string().c_str());
  return summary;
}

}  // namespace tidepool::app
