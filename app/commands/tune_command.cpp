#include "app/commands/tune_command.h"

#include <memory>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "app/memory_report.h"
#include "app/model_shapes.h"
#include "app/commands/profile_command.h"
#include "app/run_folder.h"
#include "engine/core/bytes_text.h"
#include "app/device_factory.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/perf/spec_profiles.h"

#include "app/options/run_options.h"
#include "app/options/values.h"

namespace tidepool::app {

namespace {

// The answers of the device a tuned run trains on: the cpu device's, the
// cuda device's own kernels (the GPU is here: cuDNN answers for every
// batch tried), or the simulated GPU's profile's. Never the host's for a GPU.
struct RunAnswers {
  std::unique_ptr<Device> device;          // the cuda device, whose kernels answer
  std::unique_ptr<KernelQueries> queries;  // otherwise
  const KernelQueries& get() const { return device ? device->kernels() : *queries; }
};

RunAnswers run_answers(DeviceKind kind, double link_gbps, const Profile* profile) {
  if (kind == DeviceKind::cpu) return {nullptr, make_cpu_queries()};
  if (kind == DeviceKind::cuda) return {make_device(kind, link_gbps), nullptr};
  if (!profile) require_sim_profile(kind, "");
  return {nullptr, queries_for(*profile)};
}

// eq. 9's starting point, --lr, as it was given (0.1, not 0.1f's double):
// as the run's settings record it.
double base_lr(const TuneRequest& q) { return to_json(q.run).at("lr").get<double>(); }

}  // namespace

PerfModel tuning_model(const TuneRequest& q, const Network& net, std::string& note) {
  if (!q.run.profile.empty()) {
    note = "profile " + q.run.profile;
    return PerfModel(resolve_profile(q.run.profile));
  }
  require_sim_profile(q.run.device, q.run.profile);
  // Measured now, on the device itself: the largest batch is planned with
  // that device's answers (a cuda device of its own, gone before the
  // profiler makes the ones it measures on).
  const std::int64_t k_max = [&] {
    const RunAnswers answers = run_answers(q.run.device, q.run.memory.link_gbps, nullptr);
    MemorySettings all = q.run.memory;
    all.mode = OffloadMode::all;
    const std::int64_t largest = largest_batch(
        [&](std::int64_t k) {
          try {
            plan_memory(net, k, all, answers.get());
            return true;
          } catch (const MemoryRefusal&) {
            return false;
          }
        },
        1 << 16);
    if (!largest) plan_memory(net, 1, all, answers.get());  // throws the refusal with the smallest budget
    return largest;
  }();
  ProfileRequest measuring{.run = q.run, .progress = q.progress};
  measuring.run.batch_size = k_max;  // with the conv algorithms the run will use
  Profile p = measure_device(measuring, net);
  note = "measured now on " + p.name + " at 1/8 ... 1 of k_max = " + std::to_string(k_max);
  return PerfModel(std::move(p));
}

int tune_command(const TuneRequest& q, std::ostream& out) {
  const Network net = model_for_dataset(q.run.model, q.run.dataset, q.run.fuse, q.run.memory.sync_bn);
  std::string note;
  const PerfModel model = tuning_model(q, net, note);
  // Tuned for the device a run with these options trains on, as a run's
  // --tune is: `--device sim --profile m40` tunes for an M40.
  const RunAnswers kernels = run_answers(q.run.device, q.run.memory.link_gbps, &model.profile());
  BatchTuningOptions options{base_lr(q), q.run.batch_size, q.convexity};
  if (q.progress) options.progress = [](const std::string& line) { std::cerr << "tidepool: " << line << '\n'; };
  const BatchTuning t = tune_batch(net, q.run.memory, kernels.get(), model, options);
  auto rate = [](std::int64_t k, const Prediction& p) { return p.iteration_us > 0 ? k * 1e6 / p.iteration_us : 0.0; };

  if (q.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const AccBatchRow& r : t.search.table)
      rows.push_back({{"batch", r.batch}, {"trainable", r.trainable}, {"stall_free", r.stall_free},
                      {"images_per_second", r.images_per_s}, {"stall_us", r.trainable ? r.stall_us : 0.0},
                      {"offloaded_bytes", r.offloaded_bytes}, {"pinned_bytes", r.pinned_bytes}});
    nlohmann::json j = {{"model", q.run.model},
                        {"dataset", q.run.dataset},
                        {"budget_bytes", q.run.memory.budget_bytes},
                        {"profile", model.profile().name},
                        {"largest_batch_without_offload", t.largest_without_offload},
                        {"images_per_second_without_offload",
                         t.without_offload ? rate(t.largest_without_offload, *t.without_offload) : 0.0},
                        {"largest_batch_with_offload", t.largest_with_offload},
                        {"candidates", rows}};
    if (t.best) {
      j["efficiency_optimal_batch"] = *t.best;
      j["images_per_second"] = rate(*t.best, *t.plan->predicted);
      j["learning_rate"] = t.lr;
      j["offloaded_bytes"] = t.plan->offloaded_bytes();
      j["pinned_feature_maps"] = t.plan->accudnn_pinned.size();
    }
    out << j.dump(2) << '\n';
    return 0;
  }
  char line[256];
  out << q.run.model << " (" << q.run.dataset << " shapes) in a budget of " << format_bytes(q.run.memory.budget_bytes) << " on "
      << model.profile().name << " (" << note << ")\n";
  if (t.largest_without_offload)
    std::snprintf(line, sizeof line, "largest batch without offload: %lld, %.1f images/s predicted\n",
                  static_cast<long long>(t.largest_without_offload), rate(t.largest_without_offload, *t.without_offload));
  else
    std::snprintf(line, sizeof line, "largest batch without offload: none (not even 1 fits)\n");
  out << line;
  std::snprintf(line, sizeof line, "largest batch with everything offloaded (k_max): %lld\n",
                static_cast<long long>(t.largest_with_offload));
  out << line;
  out << "candidates (Algorithm 2, largest first):\n";
  std::snprintf(line, sizeof line, "%8s %12s %10s %12s %12s\n", "batch", "images/s", "stall ms", "offloaded", "pinned");
  out << line;
  for (const AccBatchRow& r : t.search.table) {
    if (!r.trainable) {
      std::snprintf(line, sizeof line, "%8lld %12s\n", static_cast<long long>(r.batch), "does not fit");
    } else {
      std::snprintf(line, sizeof line, "%8lld %12.1f %10.2f %12s %12s%s\n", static_cast<long long>(r.batch),
                    r.images_per_s, r.stall_us / 1e3, format_bytes(r.offloaded_bytes).c_str(),
                    format_bytes(r.pinned_bytes).c_str(), r.stall_free ? "  stall-free" : "");
    }
    out << line;
  }
  if (!t.best) {
    out << "no batch trains without stalls in this budget\n";
    return 0;
  }
  std::snprintf(line, sizeof line,
                "efficiency-optimal batch k* = %lld: %.1f images/s predicted, %s offloaded, %zu feature maps kept "
                "on the device (mode accudnn, pool %s)\n",
                static_cast<long long>(*t.best), rate(*t.best, *t.plan->predicted),
                format_bytes(t.plan->offloaded_bytes()).c_str(), t.plan->accudnn_pinned.size(),
                format_bytes(t.plan->pool_bytes).c_str());
  out << line;
  std::snprintf(line, sizeof line,
                "learning rate (eq. 9): %.4g at batch %lld, from %.4g at batch %lld with c = %.3g\n", t.lr,
                static_cast<long long>(*t.best), base_lr(q), static_cast<long long>(q.run.batch_size), q.convexity);
  out << line;
  return 0;
}

TunedRun tune_run(RunSettings s) {
  if (!s.memory.budget_bytes)
    throw std::invalid_argument("--tune picks the batch that fits --budget: give one (e.g. --budget 2GiB)");
  const std::string folder = s.out.empty() ? RunFolder::default_path(s).string() : s.out;
  s.out = folder;  // the folder the profile below is named in
  const TuneRequest q{.run = s, .progress = s.progress};
  const Network net = model_for_dataset(s.model, s.dataset, s.fuse, s.memory.sync_bn);  // the network the run trains
  std::string note;
  const PerfModel model = tuning_model(q, net, note);
  // Measured now: the run plans with it and writes it into its folder
  // (run_batch, once nothing can refuse the run), where a resume finds it.
  const bool measured = s.profile.empty();
  if (measured) s.profile = (std::filesystem::path(folder) / "profile.json").string();
  const RunAnswers kernels = run_answers(s.device, s.memory.link_gbps, &model.profile());
  BatchTuningOptions options{base_lr(q), q.run.batch_size, q.convexity};
  if (q.progress) options.progress = [](const std::string& line) { std::cerr << "tidepool: " << line << '\n'; };
  const BatchTuning t = tune_batch(net, s.memory, kernels.get(), model, options);
  if (!t.best)
    throw std::invalid_argument("--tune: no batch of " + s.model + " trains without stalls in a budget of " +
                                format_bytes(s.memory.budget_bytes) + " on " + model.profile().name);
  const double rate = *t.best * 1e6 / t.plan->predicted->iteration_us;
  TunedRun r;
  if (measured) r.measured = model.profile();
  r.decision = {{"profile", s.profile},
                {"model_source", note},
                {"largest_batch_without_offload", t.largest_without_offload},
                {"largest_batch_with_offload", t.largest_with_offload},
                {"efficiency_optimal_batch", *t.best},
                {"predicted_images_per_second", rate},
                {"learning_rate", t.lr},
                {"base_learning_rate", base_lr(q)},
                {"base_batch_size", s.batch_size},
                {"convexity", q.convexity},
                {"mode", "accudnn"}};
  std::printf("tune: batch %lld (was %lld), learning rate %.4g (eq. 9 from %.4g), mode accudnn; %.1f images/s "
              "predicted on %s; the largest batch without offload is %lld, with everything offloaded %lld\n",
              static_cast<long long>(*t.best), static_cast<long long>(s.batch_size), t.lr, s.lr, rate,
              model.profile().name.c_str(), static_cast<long long>(t.largest_without_offload),
              static_cast<long long>(t.largest_with_offload));
  s.batch_size = *t.best;
  s.lr = static_cast<float>(t.lr);
  s.memory.mode = OffloadMode::accudnn;
  s.out = folder;
  r.settings = std::move(s);
  return r;
}

Command add_tune_command(CLI::App& cli) {
  auto q = std::make_shared<TuneRequest>();
  auto* cmd = cli.add_subcommand(
      "tune", "AccUDNN's efficiency-optimal batch under a budget: the largest batch without offload, k_max, "
              "Algorithm 2's candidates, k* with its swap strategy, and eq. 9's learning rate");
  RunOptions options(*cmd, q->run);
  options.network();
  options.device();
  options.memory();
  options.batch_and_lr();
  cmd->get_option("--budget")->required();
  cmd->add_option("--lr-convexity", q->convexity,
                  "eq. 9's c (default from the paper's ResNet-101 figure: lr 0.1 at 256 becomes 0.22 at 592)")
      ->capture_default_str()
      ->transform(number(1e-9, 1e9));
  cmd->add_flag("--json", q->json, "one JSON object");
  return {cmd, [q, cmd](bool quiet) {
            if (cmd->count("--mode"))
              throw std::invalid_argument("tune finds AccUDNN's batch, whose mode is accudnn: leave out --mode");
            // Memory settings that change nothing tune decides: who copies, how many
            // threads compress, AutoSwap's score, the buckets of ranks it does not plan.
            for (const char* unused : {"--copy-engine", "--compress-threads", "--swap-score", "--bucket-size"})
              if (cmd->count(unused))
                throw std::invalid_argument(std::string(unused) + " changes nothing tune decides: leave it out");
            q->progress = !quiet;
            return tune_command(*q, std::cout);
          }};
}

}  // namespace tidepool::app
