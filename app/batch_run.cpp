#include "app/batch_run.h"

#include <algorithm>
#include <limits>

#include <chrono>
#include <cmath>
#include <fstream>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

#include "app/memory_report.h"
#include "app/options/run_options.h"
#include "app/progress.h"
#include "app/run_record.h"
#include "app/session.h"
#include "app/test_hooks.h"
#include "engine/core/bytes_text.h"
#include "engine/perf/profile.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

using Clock = std::chrono::steady_clock;

void print_memory(TrainingSession& session) {
  const Trainer& trainer = session.trainer();
  for (const std::string& line :
       memory_lines(trainer.memory().summary(), session.settings().memory, trainer.options().compress_threads))
    std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// What the run is, where it writes, its memory.
void print_start(TrainingSession& session, const fs::path& folder, const Checkpoint* resume, Communicator* comm) {
  const RunSettings& s = session.settings();
  const Network& net = session.network();
  if (resume) {
    std::printf("resuming %s at epoch %lld, iteration %lld\n", folder.string().c_str(),
                static_cast<long long>(resume->epoch + 1), static_cast<long long>(resume->iteration));
  }
  const std::int64_t total = session.total_iterations();
  std::printf("training %s%s (%lld parameters) on %s, batch %lld, %lld iterations; run folder %s\n", net.name().c_str(),
              s.fuse == Fusion::relu ? " with its ReLUs fused" : "",
              static_cast<long long>(net.parameter_count()), session.train_set().name().c_str(),
              static_cast<long long>(s.batch_size), static_cast<long long>(total), folder.string().c_str());
  if (comm)
    std::printf("data-parallel over %d ranks (%s): %lld images per rank per iteration, gradients averaged in buckets of "
                "%s; %s\n",
                session.ranks(), comm->transport().c_str(), static_cast<long long>(session.rank_batch()),
                format_bytes(session.settings().memory.bucket_bytes).c_str(),
                session.settings().memory.sync_bn
                    ? "batch norm normalises over the whole global batch (--sync-bn)"
                    : "batch norm's statistics are each rank's, rank 0's at every evaluation and checkpoint");
  print_memory(session);
  if (const auto& bo = session.swap_weight_search()) {
    double best_single = bo->history.empty() ? 0 : std::numeric_limits<double>::infinity();
    for (std::size_t i = 1; i < std::min<std::size_t>(5, bo->history.size()); ++i)  // tries 2-5: each score alone
      best_single = std::min(best_single, bo->history[i].overhead_us);
    std::printf("autoswap bo: weights aoa %.3f doa %.3f wdoa %.3f swdoa %.3f, overhead %.2f ms per iteration "
                "(best single score %.2f ms) after %zu simulated iterations\n",
                bo->best.aoa, bo->best.doa, bo->best.wdoa, bo->best.swdoa, bo->overhead_us / 1e3, best_single / 1e3,
                bo->history.size());
  }
}

void print_compression_and_scaling(TrainingSession& session, const IterationResult& last_compressed) {
  const Trainer& trainer = session.trainer();
  if (last_compressed.compressed_from_bytes)
    std::printf("compressed offloads: the last iteration's %s took %s on the host (%.0f%% saved); the store holds %s\n",
                format_bytes(last_compressed.compressed_from_bytes).c_str(),
                format_bytes(last_compressed.compressed_to_bytes).c_str(),
                100.0 * (1.0 - static_cast<double>(last_compressed.compressed_to_bytes) /
                                   static_cast<double>(last_compressed.compressed_from_bytes)),
                format_bytes(last_compressed.compressed_held_bytes).c_str());
  if (session.settings().memory.precision == Precision::fp16)
    std::printf("fp16 loss scaling: %lld of %lld steps skipped (gradients overflowed), final scale %g\n",
                static_cast<long long>(trainer.loss_scaler().state().skipped_steps),
                static_cast<long long>(session.iteration()), static_cast<double>(trainer.loss_scaler().scale()));
}

}  // namespace

namespace {

std::string json_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

RunSettings resume_settings(const RunSettings& cli, const std::set<std::string>& given, const Checkpoint& saved,
                            const std::string& folder) {
  const nlohmann::json mine = to_json(cli), theirs = to_json(saved.settings);
  nlohmann::json merged = theirs;
  std::vector<std::string> changed, refused;
  for (const std::string& option : given) {
    // What each option may do is declared with it (app/options/run_options.h);
    // the invocation's own (the run's length, its data and files) are below.
    const RunOption* declared = find_run_option(option);
    if (!declared || declared->on_resume == OnResume::invocation) continue;
    const std::string& key = declared->settings_key;
    if (mine.at(key) == theirs.at(key)) continue;
    if (declared->on_resume == OnResume::may_change) {
      merged[key] = mine[key];
      changed.push_back("--" + option + " " + json_text(mine[key]) + " (was " + json_text(theirs[key]) + ")");
    } else {
      refused.push_back("--" + option + " " + json_text(mine[key]) + " (the run's: " + json_text(theirs[key]) + ")");
    }
  }
  if (!refused.empty()) {
    std::string list;
    for (const std::string& r : refused) list += (list.empty() ? "" : ", ") + r;
    throw CheckpointError("the checkpoint in " + folder + " is from a run with other settings, and --resume continues a "
                          "run with the numbers it computes: " + list +
                          ". Leave them out to continue it, or start a new run in another --out folder");
  }
  RunSettings s = run_settings_from_json(merged);
  for (const std::string& c : changed) std::printf("resuming with %s\n", c.c_str());
  // What may change between the two halves of a run.
  if (given.count("epochs") || given.count("iterations")) {
    s.epochs = cli.epochs;
    s.iterations = cli.iterations;
  }
  if (given.count("data")) s.data_dir = cli.data_dir;
  s.out = given.count("out") ? cli.out : folder;
  s.resume = folder;
  s.progress = cli.progress;
  s.stop_after = cli.stop_after;
  s.force = cli.force;
  s.checkpoint_every = cli.checkpoint_every;
  return s;
}

nlohmann::json run_batch(const RunSettings& s, const std::optional<Checkpoint>& resume, const nlohmann::json& tuned,
                         Communicator* comm, const Profile* measured,
                         const std::function<std::unique_ptr<Device>()>& make_device) {
  const auto wall_start = Clock::now();
  // Data and model first: a wrong path fails before anything slow.
  TrainingSession session(s, {.comm = comm,
                              .kernel_choices = resume ? resume->kernel_choices : std::vector<std::string>{},
                              .measured_profile = measured,
                              .make_device = make_device});
  // Every refusal comes before the folder is written (RunRecord::open).
  RunRecord record(s, resume ? &*resume : nullptr, comm, wall_start);
  if (record.nothing_to_do(session)) {
    std::printf("the run in %s is finished (%lld of %lld iterations): nothing to do, nothing changed; give a "
                "later --epochs or --iterations to continue it\n",
                s.resume.c_str(), static_cast<long long>(session.total_iterations()),
                static_cast<long long>(session.total_iterations()));
    return nlohmann::json();
  }
  session.start(record.sink());
  // Restoring can still refuse (a checkpoint that does not fit this data).
  if (resume)
    session.restore(resume->state, resume->epoch, resume->batch_in_epoch, resume->iteration, resume->loss_scale);
  record.open(session);
  print_start(session, record.path(), resume ? &*resume : nullptr, comm);
  const std::int64_t epochs = session.epochs(), total = session.total_iterations();

  const bool imagenet = s.dataset == "imagenet";
  // The sim device computes no numbers: its losses and accuracies are
  // missing (null, empty cells, words), never zeros a script would average.
  const bool numbers = session.device().caps().computes_values;
  Progress progress(s.progress);
  const std::int64_t start_iteration = session.iteration();
  const std::int64_t stop_at = s.stop_after ? std::min(total, start_iteration + s.stop_after) : total;
  IterationResult last_compressed;
  while (session.iteration() < stop_at) {
    const std::int64_t epoch = session.epoch();
    const StepReport r = session.train_iteration();
    if (session.diverged()) break;  // no metrics row or checkpoint of garbage; summary.json says so
    test_hooks::perturb_parameters_after_first_iteration(session);  // only under TIDEPOOL_TEST_PERTURB_RANK
    if (r.dyn) {
      for (const auto& p : r.dyn->profiles)
        std::printf("dyn: %-5s %s\n", to_string(p.mode),
                    !p.fits ? "does not fit" : p.seconds > 0 ? (std::to_string(p.seconds) + " s/iteration").c_str() : "fits");
      std::printf("dyn: chose %s\n", to_string(r.dyn->mode));
      print_memory(session);
    }
    record.add(session, r);
    if (r.result.compressed_from_bytes) last_compressed = r.result;
    const EpochTally& tally = record.tally();
    const double eta = (total - session.iteration()) * static_cast<double>(s.batch_size) / tally.rate();
    progress.update(epoch, epochs, session.iteration(), total, numbers ? r.result.loss : std::nanf(""), tally.rate(),
                    eta);

    // A metrics row when an epoch (or the run) ends; a checkpoint then, at
    // a stop, and between as --checkpoint-every says.
    const bool row = r.epoch_end || session.finished();
    if (!row && !record.checkpoint_due(session) && session.iteration() < stop_at) continue;
    session.check_ranks_agree();  // before anything is scored or saved
    if (!row) {
      record.save(session, epoch, r, nullptr);
      continue;
    }
    const Evaluation eval = session.evaluate();
    if (session.diverged()) break;  // summary.json keeps the last good evaluation
    char text[200];
    if (numbers)
      std::snprintf(text, sizeof text,
                    "epoch %lld: train loss %.4f, accuracy %.2f%% | test loss %.4f, accuracy %.2f%%%s",
                    static_cast<long long>(epoch + 1), tally.mean_loss(), 100.0 * tally.accuracy(), eval.loss,
                    100.0 * eval.accuracy,
                    imagenet ? (", top-5 " + std::to_string(100.0 * eval.top5).substr(0, 5) + "%").c_str() : "");
    else
      std::snprintf(text, sizeof text, "epoch %lld: no numbers (simulated), %.1f images/s",
                    static_cast<long long>(epoch + 1), tally.rate());
    progress.line(text);
    record.save(session, epoch, r, &eval);
  }
  const nlohmann::json summary = record.finish(session, tuned);
  const std::string status = summary["status"].get<std::string>();
  if (status == "stopped")
    std::printf("stopped after %lld of %lld iterations; continue with --resume %s\n",
                static_cast<long long>(session.iteration()), static_cast<long long>(total),
                record.path().string().c_str());
  print_compression_and_scaling(session, last_compressed);
  if (session.diverged())  // after summary.json: the exit status says so as well
    throw std::runtime_error(session.divergence() + " (" + (record.path() / "summary.json").string() +
                             " says \"status\": \"diverged\")");
  if (numbers)
    std::printf("%s: test accuracy %.2f%%, %.1f images/s; %s\n", status.c_str(),
                100.0 * summary["final_test_accuracy"].get<double>(), summary["images_per_second"].get<double>(),
                (record.path() / "summary.json").string().c_str());
  else
    std::printf("%s (simulated: no numbers, so no accuracy), %.1f images/s on %s; %s\n", status.c_str(),
                summary["images_per_second"].get<double>(), session.device().caps().name.c_str(),
                (record.path() / "summary.json").string().c_str());
  return summary;
}

}  // namespace tidepool::app
