#include "app/plan_command.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "app/settings_text.h"
#include "engine/memory/allocator.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/autoswap.h"
#include "engine/memory/dry_run.h"
#include "engine/plan/planner.h"
#include "models/registry.h"

namespace tidepool::app {

std::vector<PlanRow> plan_table(const Network& net, std::int64_t batch, Kernels& kernels,
                                const std::vector<std::string>& heuristics, TransferMode transfer, bool compress,
                                std::size_t autoswap_budget) {
  std::vector<PlanRow> rows;
  std::vector<OffloadMode> modes = {OffloadMode::base, OffloadMode::all, OffloadMode::conv, OffloadMode::aconv};
  if (autoswap_budget) modes.push_back(OffloadMode::autoswap);
  for (OffloadMode mode : modes)
    for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p})
      for (AllocOrder order : {AllocOrder::prefetch_first, AllocOrder::derivative_first}) {
        const PlanSettings settings{
            .scheme = scheme, .mode = mode, .order = order, .transfer = transfer, .compress = compress};
        const Schedule planned = plan(net, batch, settings, kernels);
        for (const std::string& h : heuristics) {
          Schedule s = planned;
          if (mode == OffloadMode::autoswap) {  // as little as fits the budget, as the trainer chooses
            PlanSettings limited = settings;
            limited.load_limit_bytes = autoswap_limit(net, batch, settings, kernels, h, autoswap_budget).load_limit_bytes;
            s = plan(net, batch, limited, kernels);
          }
          // The pool is the unparked schedule's; in it a real run parks
          // offloaded blocks where that fits (as the trainer decides).
          s.park_horizon = 0;
          Replay r = replay_twice(s, h);
          if (auto parked = park_if_it_fits(s, h, r.pool)) r = std::move(*parked);
          PlanRow row;
          row.park_horizon = s.park_horizon;
          row.mode = to_string(mode);
          row.algo = to_string(scheme);
          row.order = to_string(order);
          row.heuristic = h;
          row.peak_load_bytes = s.peak_load_bytes;
          row.pool_bytes = r.pool_bytes();
          row.footprint_bytes = r.steady.footprint_bytes;
          row.competitive_ratio = static_cast<double>(row.footprint_bytes) / s.peak_load_bytes;
          row.largest_free_block_bytes = r.steady.largest_free_at_peak_bytes;
          row.pinned_host_bytes = s.pinned_bytes;
          row.offloaded_bytes = s.offloaded_bytes();
          rows.push_back(row);
        }
      }
  return rows;
}

void plan_command(const PlanRequest& q, std::ostream& out) {
  if (q.batch_size <= 0) throw std::invalid_argument("--batch-size must be at least 1");
  std::int64_t classes = 0;
  models::InputKind input = models::InputKind::cifar;
  if (q.dataset == "cifar10" || q.dataset == "generated") classes = 10;
  else if (q.dataset == "cifar100") classes = 100;
  else if (q.dataset == "imagenet") classes = 1000, input = models::InputKind::imagenet;
  else throw std::invalid_argument("unknown dataset '" + q.dataset + "' for plan (valid: cifar10, cifar100, imagenet)");
  const Network net = models::make_model(q.model, input, classes);
  std::vector<std::string> heuristics = allocator_names();
  if (!q.heuristic.empty()) {
    make_allocator(q.heuristic, 0);  // throws for an unknown name, listing the valid ones
    heuristics = {q.heuristic};
  }
  const TransferMode transfer = parse_transfer(q.transfer);
  CpuKernels kernels;  // workspace sizes are the cpu device's
  const std::size_t budget = q.budget.empty() ? 0 : parse_bytes(q.budget);
  const auto rows = plan_table(net, q.batch_size, kernels, heuristics, transfer, q.compress, budget);
  if (q.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const PlanRow& r : rows)
      j.push_back({{"mode", r.mode}, {"algo", r.algo}, {"order", r.order}, {"heuristic", r.heuristic},
                   {"peak_load_bytes", r.peak_load_bytes}, {"pool_bytes", r.pool_bytes},
                   {"footprint_bytes", r.footprint_bytes}, {"competitive_ratio", r.competitive_ratio},
                   {"largest_free_block_bytes", r.largest_free_block_bytes},
                   {"pinned_host_bytes", r.pinned_host_bytes}, {"offloaded_bytes", r.offloaded_bytes},
                   {"parks_offloads", r.park_horizon > 0},
                   {"park_horizon", park_horizon_number(r.park_horizon)}});
    out << j.dump(2) << '\n';
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s, %s input, batch %lld, %s transfers%s (cpu device workspaces)\n",
                q.model.c_str(), std::string(models::to_string(input)).c_str(), static_cast<long long>(q.batch_size),
                to_string(transfer), q.compress ? ", compressed offloads (pinned: two staging slots)" : "");
  out << line;
  std::snprintf(line, sizeof line, "%-8s %-4s %-17s %-10s %12s %12s %12s %7s %12s %12s %12s %5s\n", "mode", "algo",
                "order", "heuristic", "peak load", "pool", "footprint", "ratio", "largest free", "offloaded", "pinned",
                "parks");
  out << line;
  for (const PlanRow& r : rows) {
    std::snprintf(line, sizeof line, "%-8s %-4s %-17s %-10s %12s %12s %12s %7.3f %12s %12s %12s %5s\n",
                  r.mode.c_str(), r.algo.c_str(), r.order.c_str(), r.heuristic.c_str(),
                  format_bytes(r.peak_load_bytes).c_str(), format_bytes(r.pool_bytes).c_str(),
                  format_bytes(r.footprint_bytes).c_str(), r.competitive_ratio,
                  format_bytes(r.largest_free_block_bytes).c_str(), format_bytes(r.offloaded_bytes).c_str(),
                  format_bytes(r.pinned_host_bytes).c_str(),
                  r.pinned_host_bytes == 0 || transfer == TransferMode::sync ? "-"
                  : r.park_horizon == kParkUntilNeeded                       ? "all"
                  : r.park_horizon == 0                                      ? "no"
                                                                             : std::to_string(r.park_horizon).c_str());
    out << line;
  }
  if (transfer == TransferMode::async)
    out << "parks: how many blocks freed by async offloads the pool holds parked at once, so forward does not "
           "reuse them and wait for their copies (all: until the pool needs the room; no: the pool is too "
           "tight)\n";
}

}  // namespace tidepool::app
