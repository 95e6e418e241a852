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
#include "app/run_folder.h"
#include "app/run_summary.h"
#include "app/session.h"
#include "app/test_hooks.h"
#include "engine/core/bytes_text.h"
#include "engine/perf/profile.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void print_memory(TrainingSession& session) {
  const Trainer& trainer = session.trainer();
  for (const std::string& line :
       memory_lines(trainer.memory().summary(), session.settings().memory, trainer.options().compress_threads))
    std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// The run folder: --out, or a new one named by the time; under mpirun
// every rank names it as rank 0 does (its time stamp).
fs::path run_folder_path(const RunSettings& s, Communicator* comm) {
  fs::path path = s.out.empty() ? RunFolder::default_path(s) : fs::path(s.out);
  if (comm && s.out.empty()) {
    std::string text = path.string();
    std::int64_t length = static_cast<std::int64_t>(text.size());
    comm->broadcast(&length, sizeof length, 0);
    text.resize(static_cast<std::size_t>(length));
    comm->broadcast(text.data(), text.size(), 0);
    path = text;
  }
  return path;
}

// A resumed run that has trained all it is asked to: nothing to do, and
// nothing changes. One asked for fewer iterations than it has trained is
// refused: a run is continued, never cut back.
bool is_finished(const Checkpoint& resume, const TrainingSession& session, const std::string& folder) {
  const std::int64_t done = resume.iteration, planned = session.total_iterations();
  if (done > planned)
    throw std::invalid_argument("the run in " + folder + " has trained " + std::to_string(done) +
                                " iterations, more than the " + std::to_string(planned) +
                                " asked for: a run is continued, never cut back (give --iterations " +
                                std::to_string(done) + " or more, or leave it out)");
  if (done < planned) return false;
  std::printf("the run in %s is finished (%lld of %lld iterations): nothing to do, nothing changed; give a "
              "later --epochs or --iterations to continue it\n",
              folder.c_str(), static_cast<long long>(done), static_cast<long long>(planned));
  return true;
}

// Rank 0 first: under --force it empties the folder the other ranks then
// write their traced files into (the broadcast is the barrier).
void open_on_every_rank(RunFolder& folder, int rank, Communicator* comm) {
  if (rank == 0) folder.open();
  if (comm) {
    int opened = 1;
    comm->broadcast(&opened, sizeof opened, 0);
  }
  if (rank != 0) folder.open();
}

// What the run is, where it writes, its memory; the profile it plans with
// goes into its folder.
void print_start(TrainingSession& session, const fs::path& folder, const Checkpoint* resume, Communicator* comm) {
  const RunSettings& s = session.settings();
  const Network& net = session.network();
  const Trainer& trainer = session.trainer();
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
  // The profile travels with the run: `--device sim --profile RUN/profile.json` replays it anywhere.
  if (const PerfModel* model = trainer.model()) save_profile(model->profile(), (folder / "profile.json").string());
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

// What the iterations of the current epoch added up to; a run resumed
// mid-epoch starts from what the checkpoint says its first part added up to.
struct EpochTally {
  EpochSoFar sum;
  Clock::time_point start = Clock::now();
  void add(const StepReport& r) {
    sum.train_seconds += r.seconds;
    sum.images += r.images;
    sum.correct += r.result.correct;
    sum.loss_sum += static_cast<double>(r.result.loss) * r.images;
    sum.peak_load_bytes = std::max<std::uint64_t>(sum.peak_load_bytes, r.result.memory.peak_load_bytes);
    sum.footprint_bytes = std::max<std::uint64_t>(sum.footprint_bytes, r.result.memory.footprint_bytes);
  }
  double rate() const { return sum.train_seconds > 0 ? sum.images / sum.train_seconds : 0.0; }
  double mean_loss() const { return sum.images ? sum.loss_sum / sum.images : 0.0; }
  double accuracy() const { return sum.images ? static_cast<double>(sum.correct) / sum.images : 0.0; }
  EpochSoFar so_far() const {
    EpochSoFar e = sum;
    e.wall_seconds += seconds_since(start);
    return e;
  }
};

}  // namespace

namespace {

// What earlier invocations of a resumed run recorded of the settings their
// resumes changed: its summary.json's "resumed_with", where it has one.
nlohmann::json earlier_changes(const std::string& folder) {
  std::ifstream in(fs::path(folder) / "summary.json");
  if (!in) return nullptr;
  const nlohmann::json summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return summary.is_object() && summary.contains("resumed_with") ? summary["resumed_with"] : nlohmann::json();
}

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
                         Communicator* comm, const Profile* measured) {
  const auto wall_start = Clock::now();
  // Data and model first: a wrong path fails before anything slow.
  TrainingSession session(s, {.comm = comm,
                              .kernel_choices = resume ? resume->kernel_choices : std::vector<std::string>{},
                              .measured_profile = measured});
  const fs::path path = run_folder_path(s, comm);
  // Every refusal comes before the folder is written (RunFolder::open).
  RunFolder folder(path, resume ? &*resume : nullptr, s.resume, s.trace_iterations, session.rank(), s.force);
  if (resume && is_finished(*resume, session, s.resume)) return nlohmann::json();
  session.start(folder.sink());
  // Restoring can still refuse (a checkpoint that does not fit this data).
  if (resume)
    session.restore(resume->state, resume->epoch, resume->batch_in_epoch, resume->iteration, resume->loss_scale);
  open_on_every_rank(folder, session.rank(), comm);
  Trainer& trainer = session.trainer();
  print_start(session, folder.path(), resume ? &*resume : nullptr, comm);
  const std::int64_t epochs = session.epochs(), total = session.total_iterations();

  const bool imagenet = s.dataset == "imagenet";
  // The sim device computes no numbers: its losses and accuracies are
  // missing (null, empty cells, words), never zeros a script would average.
  const bool numbers = session.device().caps().computes_values;
  Progress progress(s.progress);
  RunTotals totals;
  Evaluation last_eval;
  bool evaluated = false;  // last_eval is of the parameters as they are now
  double last_train_loss = 0;
  const std::int64_t start_iteration = session.iteration();
  const std::int64_t stop_at = s.stop_after ? std::min(total, start_iteration + s.stop_after) : total;
  EpochTally tally;
  if (resume && resume->batch_in_epoch > 0) tally.sum = resume->epoch_so_far;
  auto last_checkpoint = Clock::now();
  float lr = s.lr;
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
    lr = r.lr;
    tally.add(r);
    totals.peak_seen = std::max<std::size_t>(totals.peak_seen, r.result.memory.peak_load_bytes);
    totals.train_seconds += r.seconds;
    totals.train_images += r.images;
    evaluated = false;
    if (r.result.compressed_from_bytes) totals.last_compressed = r.result;
    const double eta = (total - session.iteration()) * static_cast<double>(s.batch_size) / tally.rate();
    progress.update(epoch, epochs, session.iteration(), total, numbers ? r.result.loss : std::nanf(""), tally.rate(),
                    eta);
    if (session.iteration() == s.trace_iterations) folder.close_traced(trainer.memory().summary(), s.batch_size, numbers);

    // A metrics row when an epoch (or the run) ends; a checkpoint then, at
    // a stop, and between as --checkpoint-every says.
    const bool row = r.epoch_end || session.finished();
    bool every = s.checkpoint_every > 0 ? session.iteration() % s.checkpoint_every == 0
                 : s.checkpoint_every == kCheckpointByTime && seconds_since(last_checkpoint) >= kCheckpointSeconds;
    // Each rank has its own clock: they checkpoint together when any says so.
    if (comm && s.checkpoint_every == kCheckpointByTime) every = comm->all_reduce_max(every ? 1 : 0) != 0;
    if (!row && !every && session.iteration() < stop_at) continue;
    session.check_ranks_agree();  // before anything is scored or saved
    last_train_loss = tally.mean_loss();
    if (row) {
      const Evaluation eval = session.evaluate();
      if (session.diverged()) break;  // summary.json keeps the last good evaluation
      last_eval = eval;
      evaluated = true;
      char text[200];
      if (numbers)
        std::snprintf(text, sizeof text,
                      "epoch %lld: train loss %.4f, accuracy %.2f%% | test loss %.4f, accuracy %.2f%%%s",
                      static_cast<long long>(epoch + 1), last_train_loss, 100.0 * tally.accuracy(), last_eval.loss,
                      100.0 * last_eval.accuracy,
                      imagenet ? (", top-5 " + std::to_string(100.0 * last_eval.top5).substr(0, 5) + "%").c_str() : "");
      else
        std::snprintf(text, sizeof text, "epoch %lld: no numbers (simulated), %.1f images/s",
                      static_cast<long long>(epoch + 1), tally.rate());
      progress.line(text);
      const EpochSoFar e = tally.so_far();
      // Before the checkpoint: a kill between the two rewinds metrics.csv
      // to the last checkpoint, which writes the row again (app/run_folder.h).
      folder.append_metrics({epoch + 1, session.iteration(), lr, last_train_loss, tally.accuracy(), last_eval.loss,
                             last_eval.accuracy, last_eval.top5, tally.rate(), e.peak_load_bytes, e.footprint_bytes,
                             e.wall_seconds, numbers});
    }
    if (r.epoch_end) tally = EpochTally{};
    folder.save_checkpoint({session.settings(), session.epoch(), session.batch_in_epoch(), session.iteration(),
                            tally.so_far(), trainer.loss_scaler().state(), session.device().kernel_choices(),
                            // where the run is, not parameters nobody computed
                            numbers ? trainer.read_state() : std::vector<float>{}});
    last_checkpoint = Clock::now();
  }
  if (!evaluated && !session.diverged()) {  // nothing trained, or stopped mid-epoch
    const Evaluation eval = session.evaluate();
    if (!session.diverged()) last_eval = eval;  // as above: the last good evaluation
  }
  // How the run ended: trained to its planned end, stopped short by
  // --stop-after (resumable), or diverged.
  const char* status = session.diverged() ? "diverged" : session.iteration() < total ? "stopped" : "done";
  if (status == std::string("stopped"))
    std::printf("stopped after %lld of %lld iterations; continue with --resume %s\n",
                static_cast<long long>(session.iteration()), static_cast<long long>(total),
                folder.path().string().c_str());

  totals.status = status;
  totals.last_eval = last_eval;
  totals.last_train_loss = last_train_loss;
  totals.wall_seconds = seconds_since(wall_start);
  nlohmann::json resumed_with;
  // As resumed (`s`): dyn mode rewrites the session's mode as it chooses.
  if (resume) resumed_with = resumed_changes(*resume, s, earlier_changes(s.resume));
  const nlohmann::json summary = run_summary(session, totals, comm, tuned, resumed_with);
  print_compression_and_scaling(session, totals.last_compressed);
  folder.finish(trainer.memory().summary(), s.batch_size, numbers, summary);
  if (session.diverged())  // after summary.json: the exit status says so as well
    throw std::runtime_error(session.divergence() + " (" + (folder.path() / "summary.json").string() +
                             " says \"status\": \"diverged\")");
  if (session.device().caps().computes_values)
    std::printf("%s: test accuracy %.2f%%, %.1f images/s; %s\n", status, 100.0 * last_eval.accuracy,
                summary["images_per_second"].get<double>(), (folder.path() / "summary.json").string().c_str());
  else
    std::printf("%s (simulated: no numbers, so no accuracy), %.1f images/s on %s; %s\n", status,
                summary["images_per_second"].get<double>(), session.device().caps().name.c_str(),
                (folder.path() / "summary.json").string().c_str());
  return summary;
}

}  // namespace tidepool::app
