#include "app/plan_command.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "app/memory_report.h"
#include "app/model_shapes.h"
#include "engine/core/bytes_text.h"
#include "app/device_factory.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/memory/allocator.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_plan.h"

namespace tidepool::app {

std::vector<PlanRow> plan_table(const Network& net, std::int64_t batch, const KernelQueries& queries,
                                const std::vector<std::string>& heuristics, TransferMode transfer, bool compress,
                                std::size_t autoswap_budget, const PerfModel* model, Precision precision,
                                HostMemory host_memory, int ranks, std::size_t bucket_bytes) {
  std::vector<PlanRow> rows;
  std::vector<OffloadMode> modes = {OffloadMode::base, OffloadMode::all, OffloadMode::conv, OffloadMode::aconv};
  if (autoswap_budget) modes.push_back(OffloadMode::autoswap);
  if (model) modes.push_back(OffloadMode::accudnn);
  for (OffloadMode mode : modes)
    for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p})
      for (AllocOrder order : {AllocOrder::prefetch_first, AllocOrder::derivative_first})
        for (const std::string& h : heuristics) {
          const MemorySettings settings{.scheme = scheme,
                                        .precision = precision,
                                        .mode = mode,
                                        .order = order,
                                        .transfer = transfer,
                                        .compress = compress,
                                        .heuristic = h,
                                        .budget_bytes = mode == OffloadMode::autoswap || mode == OffloadMode::accudnn
                                                            ? autoswap_budget
                                                            : 0,
                                        .host_memory = host_memory,
                                        .ranks = ranks,
                                        .bucket_bytes = bucket_bytes};
          try {
            const MemoryPlan p = plan_memory(net, batch, settings, queries, {}, model);
            rows.push_back({settings, p.summary(), {}, p.predicted});
          } catch (const MemoryRefusal& e) {
            PlanRow refused{settings, {}, e.what()};
            refused.memory.minimum_pool_bytes = e.minimum_pool_bytes();
            rows.push_back(std::move(refused));
          }
        }
  return rows;
}

void plan_command(const PlanRequest& q, std::ostream& out) {
  if (q.batch_size <= 0) throw std::invalid_argument("--batch-size must be at least 1");
  if (q.ranks < 1) throw std::invalid_argument("--ranks must be at least 1");
  if (q.batch_size % q.ranks != 0)
    throw std::invalid_argument("--batch-size " + std::to_string(q.batch_size) + " is the global batch and does not split "
                                "evenly over " + std::to_string(q.ranks) + " ranks");
  const std::int64_t rank_batch = q.batch_size / q.ranks;
  const Network net = model_for_dataset(q.model, q.dataset, q.fuse);
  std::vector<std::string> heuristics = allocator_names();
  if (!q.heuristic.empty()) {
    make_allocator(q.heuristic, 0);  // throws for an unknown name, listing the valid ones
    heuristics = {q.heuristic};
  }
  std::optional<PerfModel> model;
  if (!q.profile.empty()) model.emplace(resolve_profile(q.profile));
  // The plan is the profiled device's (a GPU's, from its profile, on any
  // host) or, without a profile, this machine's cpu device's.
  const std::unique_ptr<KernelQueries> queries = model ? queries_for(model->profile()) : make_cpu_queries();
  const std::string planned_for = !model                                        ? "this machine's cpu device"
                                  : model->profile().kernels == ProfiledKernels::cuda ? model->profile().name
                                                                                  : "this machine's cpu device (the profile's device is a cpu device)";
  if (q.precisions.empty()) throw std::invalid_argument("--precision needs at least one of fp32, bf16, fp16");
  std::vector<PlanRow> rows;
  for (Precision p : q.precisions) {
    // A precision the device cannot train at all (bf16 before Ampere):
    // refused alone, left out of a table of several with the reason.
    if (const std::string why = queries->refuses_16bit(activation_dtype(p)); !why.empty()) {
      if (q.precisions.size() == 1) throw std::invalid_argument(why);
      std::cerr << "tidepool: " << to_string(p) << " left out: " << why << '\n';
      continue;
    }
    for (PlanRow& r : plan_table(net, rank_batch, *queries, heuristics, q.transfer, q.compress, q.budget_bytes,
                                 model ? &*model : nullptr, p, q.host_memory, q.ranks, q.bucket_bytes))
      rows.push_back(std::move(r));
  }
  const bool pageable = q.host_memory == HostMemory::pageable;
  // A precision column only where there is a choice to show.
  const bool show_precision = q.precisions.size() > 1 || q.precisions[0] != Precision::fp32;
  auto precision_cell = [&](const PlanRow& r) {
    return show_precision ? std::string(to_string(r.settings.precision)) + " " : std::string();
  };
  if (q.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const PlanRow& r : rows) {
      nlohmann::json row = {{"fuse", to_string(q.fuse)},
                            {"precision", to_string(r.settings.precision)},
                            {"mode", to_string(r.settings.mode)},
                            {"algo", to_string(r.settings.scheme)},
                            {"order", to_string(r.settings.order)},
                            {"heuristic", r.settings.heuristic}};
      row["fits"] = r.fits();
      if (r.fits())
        row.update(memory_json(r.memory));
      else
        row.update({{"minimum_pool_bytes", r.memory.minimum_pool_bytes}, {"refusal", r.refusal}});
      if (r.predicted) {
        row["predicted_iteration_us"] = r.predicted->iteration_us;
        row["predicted_stall_us"] = r.predicted->stall_us;
      }
      j.push_back(std::move(row));
    }
    out << j.dump(2) << '\n';
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s%s, %s input, batch %lld, %s transfers%s%s\n",
                q.model.c_str(), q.fuse == Fusion::relu ? " (ReLUs fused)" : "",
                std::string(models::to_string(input_for_dataset(q.dataset))).c_str(),
                static_cast<long long>(q.batch_size),
                to_string(q.transfer), q.compress ? ", compressed offloads (pinned: two staging slots)" : "",
                pageable ? ", pageable host memory (pinned: the staging buffers)" : "");
  out << line << "planned for " << planned_for << " (its workspaces, layout and 16-bit kernels)\n";
  if (q.ranks > 1)
    out << "each of " << q.ranks << " ranks: batch " << rank_batch << " of the global " << q.batch_size
        << ", its parameter gradients all-reduced in buckets of " << format_bytes(q.bucket_bytes)
        << " (tensors of the plan, alive from backward to the update)\n";
  std::snprintf(line, sizeof line, "%-8s %-4s %-17s %-10s %12s %12s %12s %7s %12s %12s %12s %5s\n", "mode", "algo",
                "order", "heuristic", "peak load", "pool", "footprint", "ratio", "largest free", "offloaded", "pinned",
                "parks");
  line[std::strlen(line) - 1] = '\0';
  out << (show_precision ? "prec " : "") << line << (pageable ? "     pageable" : "")
      << (model ? "   pred ms  stall ms\n" : "\n");
  for (const PlanRow& r : rows) {
    const MemorySummary& m = r.memory;
    if (!r.fits()) {
      std::snprintf(line, sizeof line, "%-8s %-4s %-17s %-10s does not fit: the smallest budget that works is %s\n",
                    to_string(r.settings.mode), to_string(r.settings.scheme), to_string(r.settings.order),
                    r.settings.heuristic.c_str(), format_bytes(m.minimum_pool_bytes).c_str());
      out << precision_cell(r) << line;
      continue;
    }
    std::snprintf(line, sizeof line, "%-8s %-4s %-17s %-10s %12s %12s %12s %7.3f %12s %12s %12s %5s\n",
                  to_string(r.settings.mode), to_string(r.settings.scheme), to_string(r.settings.order),
                  r.settings.heuristic.c_str(), format_bytes(m.peak_load_bytes).c_str(),
                  format_bytes(m.pool_bytes).c_str(), format_bytes(m.footprint_bytes).c_str(), m.competitive_ratio(),
                  format_bytes(m.largest_free_at_peak_bytes).c_str(), format_bytes(m.offloaded_bytes).c_str(),
                  format_bytes(m.pinned_bytes).c_str(),
                  m.pinned_bytes == 0 || q.transfer == TransferMode::sync ? "-"
                  : m.park_horizon == kParkUntilNeeded                   ? "all"
                  : m.park_horizon == 0                                  ? "no"
                                                                         : std::to_string(m.park_horizon).c_str());
    out << precision_cell(r);
    if (pageable) {
      line[std::strlen(line) - 1] = '\0';
      out << line;
      std::snprintf(line, sizeof line, " %12s\n", format_bytes(m.pageable_bytes).c_str());
    }
    if (r.predicted) {
      line[std::strlen(line) - 1] = '\0';
      out << line;
      std::snprintf(line, sizeof line, " %9.2f %9.2f\n", r.predicted->iteration_us / 1e3, r.predicted->stall_us / 1e3);
    }
    out << line;
  }
  if (q.transfer == TransferMode::async)
    out << "parks: how many blocks freed by async offloads the pool holds parked at once, so forward does not "
           "reuse them and wait for their copies (all: until the pool needs the room; no: the pool is too "
           "tight)\n";
  if (model)
    out << "pred ms, stall ms: one iteration as " << model->profile().name
        << " would run it, by AccUDNN's model (engine/plan/accudnn_schedule.h); accudnn rows: all's inputs that "
           "go without a stall offloaded, the rest kept"
        << (q.budget_bytes ? " in the budget" : "") << "\n";
  if (q.budget_bytes)
    out << "autoswap rows: a run with --budget " << exact_bytes_text(q.budget_bytes)
        << ", offloading as little as fits that pool\n";
}

}  // namespace tidepool::app
