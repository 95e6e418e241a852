#include "app/commands/plan_command.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "engine/plan/memory_facts.h"
#include "app/options/values.h"
#include "app/model_shapes.h"
#include "engine/core/bytes_text.h"
#include "app/device_factory.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/memory/allocator.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_plan.h"

namespace tidepool::app {

std::vector<PlanRow> plan_rows(const Network& net, std::int64_t batch, const KernelQueries& queries,
                               const std::vector<MemorySettings>& rows, const PerfModel* model) {
  std::vector<PlanRow> planned(rows.size());
  std::vector<std::exception_ptr> errors(rows.size());
  // The rows are independent plans (plan_memory reads the network, the
  // queries and the model, and writes nothing they share): one per core at
  // a time, each written to its own place, so the table is the same in any
  // order the threads take them.
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};  // a bad row: the rows not yet taken are not planned (those before it were)
  auto plan_next_rows = [&] {
    for (std::size_t i; !failed && (i = next++) < rows.size();) {
      const MemorySettings& settings = rows[i];
      try {
        try {
          const MemoryPlan p = plan_memory(net, batch, settings, queries, {}, model);
          planned[i] = {settings, p.summary(), {}, p.predicted};
          planned[i].hybrid_from = p.hybrid_from;
        } catch (const MemoryRefusal& e) {
          planned[i] = {settings, {}, e.what()};
          planned[i].memory.minimum_pool_bytes = e.minimum_pool_bytes();
        }
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
    }
  };
  {
    const std::size_t threads = std::min<std::size_t>(rows.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::jthread> helpers;
    try {
      for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(plan_next_rows);
    } catch (const std::system_error&) {
      // No more threads to be had (a process limit): plan with those there are.
    }
    plan_next_rows();
  }
  // A row that is not a plan or a refusal (a bad setting) fails the table as
  // it would have in order: the first such row's error.
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return planned;
}

namespace {

// The memory modes a table enumerates: AutoSwap's with a budget to fit,
// AccUDNN's with a performance model to plan by; the recompute modes last,
// so that the offload modes' rows keep their places.
std::vector<OffloadMode> table_modes(std::size_t budget, bool model) {
  std::vector<OffloadMode> modes = {OffloadMode::base, OffloadMode::all, OffloadMode::conv, OffloadMode::aconv};
  if (budget) modes.push_back(OffloadMode::autoswap);
  if (model) modes.push_back(OffloadMode::accudnn);
  modes.push_back(OffloadMode::recompute);
  modes.push_back(OffloadMode::recompute_cheap);
  if (budget && model) modes.push_back(OffloadMode::hybrid);  // weighs the others in the budget
  return modes;
}

// Every mode x scheme x order x heuristic, each with `base`'s other
// settings; the budget only where the mode plans in it (AutoSwap, AccUDNN):
// the others show the pool they need.
std::vector<MemorySettings> table_settings(const MemorySettings& base, const std::vector<OffloadMode>& modes,
                                           const std::vector<ConvScheme>& schemes,
                                           const std::vector<AllocOrder>& orders,
                                           const std::vector<std::string>& heuristics) {
  std::vector<MemorySettings> rows;
  for (OffloadMode mode : modes)
    for (ConvScheme scheme : schemes)
      for (AllocOrder order : orders)
        for (const std::string& h : heuristics) {
          MemorySettings m = base;
          m.mode = mode;
          m.scheme = scheme;
          m.order = order;
          m.heuristic = h;
          if (mode != OffloadMode::autoswap && mode != OffloadMode::accudnn && mode != OffloadMode::hybrid)
            m.budget_bytes = 0;
          rows.push_back(m);
        }
  return rows;
}

constexpr ConvScheme kSchemes[] = {ConvScheme::m, ConvScheme::p};
constexpr AllocOrder kOrders[] = {AllocOrder::prefetch_first, AllocOrder::derivative_first};

// An alternative that is the run's own row (planned in the run's budget).
bool same_row(MemorySettings a, MemorySettings b) {
  a.budget_bytes = b.budget_bytes = 0;
  return a == b;
}

template <class T, std::size_t N>
std::vector<T> given_or(const std::vector<T>& given, const T (&every)[N]) {
  return given.empty() ? std::vector<T>(every, every + N) : given;
}

}  // namespace

std::vector<PlanRow> plan_table(const Network& net, std::int64_t batch, const KernelQueries& queries,
                                const std::vector<std::string>& heuristics, TransferMode transfer, bool compress,
                                std::size_t autoswap_budget, const PerfModel* model, Precision precision,
                                HostMemory host_memory, int ranks, std::size_t bucket_bytes) {
  const MemorySettings base{.precision = precision,
                            .transfer = transfer,
                            .compress = compress,
                            .budget_bytes = autoswap_budget,
                            .host_memory = host_memory,
                            .ranks = ranks,
                            .bucket_bytes = bucket_bytes};
  return plan_rows(net, batch, queries,
                   table_settings(base, table_modes(autoswap_budget, model != nullptr), given_or({}, kSchemes),
                                  given_or({}, kOrders), heuristics),
                   model);
}

void plan_command(const PlanRequest& request, std::ostream& out) {
  const RunSettings& run = request.run;
  const PlanLists& lists = request.lists;
  if (!run.resume.empty())
    throw std::invalid_argument("plan plans a run from its options; to plan a run being resumed, give the options it "
                                "was started with (its summary.json's \"settings\")");
  // A GPU's plan comes from that GPU's answers, never this host's.
  require_sim_profile(run.device, run.profile);
  if (run.device == DeviceKind::cuda && run.profile.empty())
    throw std::invalid_argument("plan asks a device's answers without running it: for the cuda device, give a "
                                "profile measured on it (tidepool profile --device cuda -o gpu.json; plan --profile "
                                "gpu.json)");
  MemorySettings mine = run.memory;  // this run's
  mine.ranks = request.ranks;
  if (request.ranks < 1) throw std::invalid_argument("--ranks must be at least 1");
  if (run.batch_size % request.ranks != 0)
    throw std::invalid_argument("--batch-size " + std::to_string(run.batch_size) +
                                " is the global batch and does not split evenly over " +
                                std::to_string(request.ranks) + " ranks");
  const std::int64_t rank_batch = run.batch_size / request.ranks;
  const Network net = model_for_dataset(run.model, run.dataset, run.fuse, mine.sync_bn);
  std::optional<PerfModel> model;
  if (!run.profile.empty()) model.emplace(resolve_profile(run.profile));
  // The plan is the profiled device's (a GPU's, from its profile, on any
  // host) or, without a profile, this machine's cpu device's.
  const std::unique_ptr<KernelQueries> queries = model ? queries_for(model->profile()) : make_cpu_queries();
  const std::string planned_for = !model                                        ? "this machine's cpu device"
                                  : model->profile().kernels == ProfiledKernels::cuda ? model->profile().name
                                                                                  : "this machine's cpu device (the profile's device is a cpu device)";
  const std::vector<Precision> precisions = lists.precisions.empty() ? std::vector{mine.precision} : lists.precisions;
  // This run's row first (refused as the run would be, but for a budget
  // too small: that is the row's answer), then its alternatives.
  std::vector<MemorySettings> settings;
  for (Precision p : precisions) {
    // A precision the device cannot train at all (bf16 before Ampere):
    // refused alone, left out of a table of several with the reason.
    if (const std::string why = queries->refuses_16bit(activation_dtype(p)); !why.empty()) {
      if (precisions.size() == 1) throw std::invalid_argument(why);
      std::cerr << "tidepool: " << to_string(p) << " left out: " << why << '\n';
      continue;
    }
    MemorySettings base = mine;
    base.precision = p;
    if (settings.empty()) settings.push_back(base);
    for (const MemorySettings& m :
         table_settings(base, lists.modes.empty() ? table_modes(mine.budget_bytes, model.has_value()) : lists.modes,
                        given_or(lists.schemes, kSchemes), given_or(lists.orders, kOrders),
                        lists.heuristics.empty() ? allocator_names() : lists.heuristics))
      if (!same_row(m, settings.front())) settings.push_back(m);
  }
  if (settings.empty()) throw std::invalid_argument("the device refuses every precision asked for");
  std::vector<PlanRow> rows = plan_rows(net, rank_batch, *queries, settings, model ? &*model : nullptr);
  rows.front().this_run = settings.front() == mine;
  const std::size_t budget = mine.budget_bytes;
  PlanRow* hybrid = nullptr;  // --optimal: this run's settings in mode hybrid, against the optimum
  if (request.optimal) {
    if (!budget) throw std::invalid_argument("--optimal solves hybrid's choice in a budget: give --budget");
    if (!model)
      throw std::invalid_argument("--optimal weighs offloads against recomputes with a performance model: give "
                                  "--profile (a file from `tidepool profile`, or a GPU specification)");
    MemorySettings h = settings.front();
    h.mode = OffloadMode::hybrid;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const PlanRow& r) { return r.settings == h; });
    if (it == rows.end()) {
      rows.push_back(plan_rows(net, rank_batch, *queries, {h}, &*model).front());
      it = rows.end() - 1;
    }
    hybrid = &*it;
    std::cerr << "tidepool: solving the keep/offload/recompute programme with CBC (at most "
              << request.time_limit_s << " s per solve)\n";
    hybrid->optimal = solve_optimal(net, rank_batch, PlanSettings{Phase::train, h, {}}, *queries, *model,
                                    request.time_limit_s);
  }
  const bool pageable = mine.host_memory == HostMemory::pageable;
  // A precision column only where there is a choice to show.
  const bool show_precision = precisions.size() > 1 || precisions[0] != Precision::fp32;
  auto precision_cell = [&](const PlanRow& r) {
    return show_precision ? std::string(to_string(r.settings.precision)) + " " : std::string();
  };
  if (request.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const PlanRow& r : rows) {
      nlohmann::json row = {{"this_run", r.this_run},
                            {"fuse", to_string(run.fuse)},
                            {"precision", to_string(r.settings.precision)},
                            {"mode", to_string(r.settings.mode)},
                            {"algo", to_string(r.settings.scheme)},
                            {"order", to_string(r.settings.order)},
                            {"heuristic", r.settings.heuristic}};
      row["fits"] = r.fits();  // planned, not refused
      if (budget) row["fits_budget"] = r.fits(budget);  // ... and the pool it needs fits --budget
      if (r.fits())
        row.update(memory_json(r.memory));
      else
        row.update({{fact_info(MemoryFact::minimum_pool).key, r.memory.minimum_pool_bytes}, {"refusal", r.refusal}});
      if (r.predicted) {
        row["predicted_iteration_us"] = r.predicted->iteration_us;
        row["predicted_stall_us"] = r.predicted->stall_us;
        if (r.predicted->recompute_flops > 0) {  // only rows that recompute carry them
          row["predicted_recompute_us"] = r.predicted->recompute_us;
          row["recompute_gflop"] = r.predicted->recompute_flops / 1e9;
        }
      }
      if (!r.hybrid_from.empty()) row["hybrid_from"] = r.hybrid_from;
      if (r.optimal) {
        const OptimalChoice& o = *r.optimal;
        nlohmann::json j = {{"feasible", o.feasible}, {"proven", o.proven}, {"fits", o.fits},
                            {"solver_seconds", o.seconds}, {"solves", o.solves}, {"variables", o.variables},
                            {"constraints", o.constraints}};
        if (o.feasible)
          j.update({{"predicted_iteration_us", o.predicted.iteration_us}, {"objective_us", o.objective_us},
                    {"bound_us", o.bound_us}, {"offloaded", o.offloaded}, {"recomputed", o.recomputed}});
        row["optimal"] = std::move(j);
      }
      j.push_back(std::move(row));
    }
    out << j.dump(2) << '\n';
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s%s, %s input, batch %lld, %s transfers%s%s\n", run.model.c_str(),
                run.fuse == Fusion::relu ? " (ReLUs fused)" : "",
                std::string(models::to_string(input_for_dataset(run.dataset))).c_str(),
                static_cast<long long>(run.batch_size), to_string(mine.transfer),
                mine.compress ? ", compressed offloads (pinned: two staging slots)" : "",
                pageable ? ", pageable host memory (pinned: the staging buffers)" : "");
  out << line << "planned for " << planned_for << " (its workspaces, layout and 16-bit kernels)\n";
  if (request.ranks > 1)
    out << "each of " << request.ranks << " ranks: batch " << rank_batch << " of the global " << run.batch_size
        << ", its parameter gradients all-reduced in buckets of " << format_bytes(mine.bucket_bytes)
        << " (tensors of the plan, alive from backward to the update)\n";
  // The figures' columns, named and written as engine/plan/memory_facts.h
  // declares them; "-" where a figure says nothing (parking without async
  // offloads).
  struct Column {
    MemoryFact fact;
    int width;
  };
  std::vector<Column> columns = {{MemoryFact::peak_load, 12},   {MemoryFact::pool, 12},
                                 {MemoryFact::footprint, 12},   {MemoryFact::competitive_ratio, 7},
                                 {MemoryFact::largest_free_at_peak, 12}, {MemoryFact::offloaded, 12},
                                 {MemoryFact::pinned_host, 12}, {MemoryFact::park_horizon, 8}};
  if (pageable) columns.push_back({MemoryFact::pageable_host, 12});
  auto cell = [](const std::string& text, int width) {
    return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(text.size()))) + 1, ' ') + text;
  };
  std::snprintf(line, sizeof line, "%-15s %-4s %-17s %-10s", "mode", "algo", "order", "heuristic");
  out << (show_precision ? "prec " : "") << line;
  for (const Column& c : columns) out << cell(fact_info(c.fact).column, c.width);
  out << (model ? "   pred ms  stall ms recomp ms" : "") << (budget ? "  fits" : "") << '\n';
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const PlanRow& r = rows[i];
    if (i == 1) out << "alternatives:\n";
    const MemorySummary& m = r.memory;
    if (!r.fits()) {
      std::snprintf(line, sizeof line, "%-15s %-4s %-17s %-10s does not fit: the %s is %s\n",
                    to_string(r.settings.mode), to_string(r.settings.scheme), to_string(r.settings.order),
                    r.settings.heuristic.c_str(), fact_info(MemoryFact::minimum_pool).label,
                    fact_text(m, MemoryFact::minimum_pool).c_str());
      out << precision_cell(r) << line;
      continue;
    }
    std::snprintf(line, sizeof line, "%-15s %-4s %-17s %-10s", to_string(r.settings.mode), to_string(r.settings.scheme),
                  to_string(r.settings.order), r.settings.heuristic.c_str());
    out << precision_cell(r) << line;
    const bool parks = m.pinned_bytes > 0 && mine.transfer == TransferMode::async;
    for (const Column& c : columns)
      out << cell(c.fact == MemoryFact::park_horizon && !parks ? "-" : fact_text(m, c.fact), c.width);
    if (r.predicted) {
      std::snprintf(line, sizeof line, " %9.2f %9.2f %9.2f", r.predicted->iteration_us / 1e3, r.predicted->stall_us / 1e3,
                    r.predicted->recompute_us / 1e3);
      out << line;
    }
    if (budget) out << (r.fits(budget) ? "   yes" : "    no");
    out << '\n';
  }
  out << "the first row is " << (rows.front().this_run ? "this run's" : "this run's settings in the first precision")
      << (rows.size() > 1 ? "; the alternatives change what was not given (--mode, --algo, --order, --heuristic: "
                            "one value keeps it, a list a,b plans each)\n"
                          : "\n");
  if (mine.transfer == TransferMode::async)
    out << fact_info(MemoryFact::park_horizon).column << ": how many blocks freed by async offloads the pool holds parked at once, so forward does not "
           "reuse them and wait for their copies (all: until the pool needs the room; none: the pool is too "
           "tight)\n";
  if (model)
    out << "pred ms, stall ms: one iteration as " << model->profile().name
        << " would run it, by AccUDNN's model (engine/plan/accudnn_schedule.h); accudnn rows: all's inputs that "
           "go without a stall offloaded, the rest kept"
        << (budget ? " in the budget" : "") << "; recomp ms: the part of it spent computing layers again\n";
  if (budget)
    out << "fits: the pool the row needs fits --budget " << exact_bytes_text(budget)
        << " (this run's row, and autoswap's, accudnn's and hybrid's, plan in it)\n";
  if (hybrid) {
    const OptimalChoice& o = *hybrid->optimal;
    std::snprintf(line, sizeof line, "%.1f s", o.seconds);
    out << "optimal (CBC, " << o.variables << " binaries, " << o.constraints << " constraints, " << o.solves
        << (o.solves == 1 ? " solve, " : " solves, ") << line << "): ";
    if (!o.feasible) {
      out << "no choice saves enough at every step" << (o.proven ? "" : " (or none found in the time limit)") << "\n";
    } else {
      std::snprintf(line, sizeof line, "predicted %.2f ms, %d offloaded and %d recomputed, %s, %s", o.predicted.iteration_us / 1e3,
                    o.offloaded, o.recomputed,
                    o.proven ? "proven optimal" : "the best found in the time limit (a faster machine may find better)",
                    o.fits ? "fits the budget" : "does not fit the budget (fragmentation)");
      out << line << "\n";
      if (hybrid->predicted && hybrid->fits(budget)) {
        const double gap = hybrid->predicted->iteration_us / o.predicted.iteration_us - 1;
        std::snprintf(line, sizeof line, "hybrid: predicted %.2f ms, %+.1f %% against the optimum's prediction",
                      hybrid->predicted->iteration_us / 1e3, 100 * gap);
        out << line << "\n";
      }
    }
    out << "the programme: each activation kept, offloaded or recomputed once, its times fixed by the schedule, "
           "costs as hybrid ranks them (engine/plan/optimal.h)\n";
  }
}

Command add_plan_command(CLI::App& cli) {
  auto q = std::make_shared<PlanRequest>();
  auto* cmd = cli.add_subcommand(
      "plan", "the memory a run would use, before it runs: give a run's options, see its row and the alternatives "
              "(every offload mode, conv scheme, order and heuristic not given)");
  RunOptions(*cmd, q->run, &q->lists).all();
  cmd->add_option("--ranks", q->ranks,
                  "plan one rank of a data-parallel run of this many (--batch-size is the global batch)")
      ->capture_default_str()
      ->transform(number(1, kMostRanks));
  cmd->add_flag("--json", q->json, "a JSON list of result objects, this run's first (\"this_run\": true)");
  cmd->add_flag("--optimal", q->optimal,
                "also solve mode hybrid's keep/offload/recompute choice as an integer programme (COIN-OR CBC) and "
                "print hybrid's distance from it; needs --budget and --profile");
  cmd->add_option("--time-limit", q->time_limit_s, "--optimal: the solver's limit in seconds per solve")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return {cmd, [q](bool) {
            plan_command(*q, std::cout);
            return 0;
          }};
}

}  // namespace tidepool::app
