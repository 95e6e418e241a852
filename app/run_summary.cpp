#include "app/run_summary.h"

#include <vector>

#include "app/memory_report.h"
#include "app/options/run_options.h"
#include "engine/core/bytes_text.h"

namespace tidepool::app {
namespace {

std::string hex(std::uint64_t v) { return hex_text(v, 16); }

}  // namespace

nlohmann::json resumed_changes(const Checkpoint& saved, const RunSettings& now, const nlohmann::json& earlier) {
  nlohmann::json changes = earlier.is_array() ? earlier : nlohmann::json::array();
  const nlohmann::json was = to_json(saved.settings), is = to_json(now);
  for (const RunOption& o : run_option_table())
    if (o.on_resume == OnResume::may_change && was.at(o.settings_key) != is.at(o.settings_key))
      changes.push_back({{"option", "--" + o.name},
                         {"was", was.at(o.settings_key)},
                         {"now", is.at(o.settings_key)},
                         {"from_iteration", saved.iteration + 1}});
  return changes;
}

nlohmann::json run_summary(TrainingSession& session, const RunTotals& t, Communicator* comm,
                           const nlohmann::json& tuned, const nlohmann::json& resumed_with) {
  const RunSettings& s = session.settings();
  const MemorySettings& memory = s.memory;
  Trainer& trainer = session.trainer();  // (its checksum reads the device)
  // The sim device computes no numbers: its losses and accuracies are
  // missing (null), never zeros a script would average.
  const bool numbers = session.device().caps().computes_values;
  auto number = [&](double v) { return numbers ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const IterationResult& packed = t.last_compressed;
  nlohmann::json summary = {
      {"model", s.model},
      {"dataset", s.dataset},
      {"device", session.device().caps().name},
      {"batch_size", s.batch_size},
      {"epochs", session.epochs()},
      {"iterations", session.iteration()},
      {"total_iterations", session.total_iterations()},
      {"status", t.status},
      {"parameters", session.network().parameter_count()},
      {"final_test_accuracy", number(t.last_eval.accuracy)},
      {"final_test_top5", number(t.last_eval.top5)},
      {"final_test_loss", number(t.last_eval.loss)},
      {"final_train_loss", number(t.last_train_loss)},
      {"images_per_second", t.train_seconds > 0 ? t.train_images / t.train_seconds : 0.0},
      {"mode", to_string(memory.mode)},
      {"transfer", to_string(memory.transfer)},
      {"order", to_string(memory.order)},
      {"heuristic", memory.heuristic},
      {"algo", to_string(memory.scheme)},
      {"compress", memory.compress},
      {"host_memory", to_string(memory.host_memory)},
      {"copy_engine", to_string(memory.copy_engine)},
      {"compressed_from_bytes", packed.compressed_from_bytes},
      {"compressed_to_bytes", packed.compressed_to_bytes},
      {"compressed_held_bytes", packed.compressed_held_bytes},
      {"compress_threads", trainer.options().compress_threads},
      {"param_checksum", hex(trainer.param_checksum())},
      // fp16's loss scaling: the steps whose gradients overflowed (their
      // updates skipped) in the whole run, and the scale it ended with.
      {"skipped_steps", trainer.loss_scaler().state().skipped_steps},
      {"loss_scale", memory.precision == Precision::fp16 ? nlohmann::json(trainer.loss_scaler().scale())
                                                          : nlohmann::json(nullptr)},
      {"skipped_images", session.train_set().skipped() + session.test_set().skipped()},
      {"wall_seconds", t.wall_seconds},
      {"settings", to_json(s)},  // all of them, for `tidepool view` (app/recorded_run.h)
  };
  // The MemoryPlan the run executed, as `tidepool plan` prints it.
  summary.update(memory_json(trainer.memory().summary()));
  // Every rank's memory and speed, gathered from all of them.
  const int ranks = session.ranks();
  std::vector<double> figures(2 * static_cast<std::size_t>(ranks), 0.0);
  const auto mine = 2 * static_cast<std::size_t>(session.rank());
  figures[mine] = static_cast<double>(t.peak_seen);
  figures[mine + 1] = t.train_seconds > 0 ? static_cast<double>(t.train_images) / ranks / t.train_seconds : 0.0;
  if (comm) comm->all_reduce_sum(figures.data(), figures.size());
  // Each rank's own checksum of its parameters, as it ends: what shows that
  // the ranks trained one model, beside the check that stops a run whose
  // ranks differ (TrainingSession::check_ranks_agree).
  const std::vector<std::uint64_t> checksums =
      comm ? comm->all_gather(trainer.param_checksum()) : std::vector<std::uint64_t>{trainer.param_checksum()};
  nlohmann::json per_rank = nlohmann::json::array();
  for (int r = 0; r < ranks; ++r)
    per_rank.push_back({{"rank", r},
                        {"peak_load_bytes", static_cast<std::uint64_t>(figures[2 * static_cast<std::size_t>(r)])},
                        {"images_per_second", figures[2 * static_cast<std::size_t>(r) + 1]},
                        {"param_checksum", hex(checksums[static_cast<std::size_t>(r)])}});
  summary["ranks"] = ranks;
  summary["rank_batch_size"] = session.rank_batch();
  summary["bucket_bytes"] = ranks > 1 ? nlohmann::json(memory.bucket_bytes) : nlohmann::json(nullptr);
  summary["sync_bn"] = memory.sync_bn;  // as asked; on one rank it changes nothing
  summary["per_rank"] = std::move(per_rank);
  if (session.diverged()) summary["divergence"] = session.divergence();
  if (!tuned.is_null()) summary["tune"] = tuned;
  if (!resumed_with.empty()) summary["resumed_with"] = resumed_with;
  return summary;
}

}  // namespace tidepool::app
