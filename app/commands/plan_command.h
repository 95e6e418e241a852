// `tidepool plan`: the dry-run planner's table. For every offload mode x
// conv algorithm x allocation order x heuristic it makes the MemoryPlan a
// run with those settings would execute (engine/plan/memory_plan.h) and
// prints its figures: what that run will observe.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/commands/command.h"
#include "app/options/run_options.h"
#include "engine/core/fusion.h"
#include "engine/core/network.h"
#include "engine/device/kernel_queries.h"
#include "engine/schedule/memory_settings.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/accudnn_schedule.h"
#include "engine/plan/memory_summary.h"
#include "engine/plan/optimal.h"

namespace tidepool::app {

struct PlanRow {
  MemorySettings settings;  // the row's mode, algo, order, heuristic (and budget for AutoSwap)
  MemorySummary memory;
  // A run with these settings would be refused (an AutoSwap budget below
  // what it can do): why, and memory.minimum_pool_bytes is what would work.
  std::string refusal;
  bool fits() const { return refusal.empty(); }
  // Planned, and its pool fits `budget` (0: no budget).
  bool fits(std::size_t budget) const { return fits() && (!budget || memory.pool_bytes <= budget); }
  // With a performance model: one iteration's predicted time and stall.
  std::optional<Prediction> predicted;
  bool this_run = false;  // plan_command: the row of the run the options describe
  // Mode hybrid: what its choice came from (MemoryPlan::hybrid_from).
  std::string hybrid_from;
  // --optimal, on this run's hybrid row: the integer programme's choice
  // (engine/plan/optimal.h).
  std::optional<OptimalChoice> optimal;
};

// Plans each of `rows` as a run with those settings would (a refused one
// keeps its refusal and the smallest budget that works). `model`: every
// row's predicted iteration time and stall. The rows are planned on
// every core at once; the table is the same as one by one.
std::vector<PlanRow> plan_rows(const Network& net, std::int64_t batch, const KernelQueries& kernels,
                               const std::vector<MemorySettings>& rows, const PerfModel* model = nullptr);

// Every offload mode x conv scheme x allocation order x heuristic, in that
// nesting, with the other settings of `base`. `transfer`: async (the
// default) parks offloaded blocks where the pool has room for it, which
// moves placement; sync never does. `compress`: the pinned column is the two
// staging slots of compressed offloads (placement does not change).
// `autoswap_budget`: also AutoSwap's rows, offloading as little as fits a
// pool of that many bytes (as a run with --budget does); 0: none. `model`:
// also AccUDNN's rows (in that budget, or unbounded), and every row's
// predicted iteration time and stall.
std::vector<PlanRow> plan_table(const Network& net, std::int64_t batch, const KernelQueries& kernels,
                                const std::vector<std::string>& heuristics,
                                TransferMode transfer = TransferMode::async, bool compress = false,
                                std::size_t autoswap_budget = 0, const PerfModel* model = nullptr,
                                Precision precision = Precision::fp32, HostMemory host_memory = HostMemory::pinned,
                                int ranks = 1, std::size_t bucket_bytes = kDefaultBucketBytes);

// `tidepool plan [a run's options]`: the row of the run those options
// describe first, then its alternatives. Each memory choice given (--mode,
// --algo, --order, --heuristic, --precision) keeps the alternatives to its
// values; each left out is enumerated (every mode, scheme, order and
// heuristic; the run's precision), so `tidepool plan` pasted before a
// --batch run's options prints that run's memory first. Under --budget the
// run's row is planned in the budget as the run would be, and each
// alternative says whether the pool it needs fits it (AutoSwap's and
// AccUDNN's rows plan in it).
struct PlanRequest {
  RunSettings run;  // a run's options, with a run's defaults
  PlanLists lists;  // the memory choices given, each as a list
  // Data-parallel: one rank of `ranks`, at batch_size / ranks (batch_size
  // is the global batch), with its gradient buckets.
  int ranks = 1;
  bool json = false;
  // Solve hybrid's choice as an integer programme too, and print how far
  // hybrid's prediction is from the optimum's; CBC's limit per solve.
  bool optimal = false;
  double time_limit_s = 60;
};

void plan_command(const PlanRequest& request, std::ostream& out);

// `tidepool plan [a run's options] [--ranks N] [--json]`.
Command add_plan_command(CLI::App& cli);

}  // namespace tidepool::app
