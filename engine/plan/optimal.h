// `tidepool plan --optimal`: mode hybrid's keep / offload / recompute
// choice solved as an integer programme with COIN-OR CBC, to measure
// hybrid's greedy choice against.
//
// Per activation of ways_off() (engine/plan/hybrid.h), binary o_t
// (offloaded) and r_t (recomputed), o_t + r_t <= 1, a closed way fixed
// at 0. Minimise sum(offload_us * o_t + recompute_us * r_t): the costs
// hybrid ranks by. At every step k of the schedule that keeps everything
// where its load exceeds the budget, the tensors away at k must save the
// excess: an offloaded tensor is away after its last forward reader until
// the backward step before its first backward reader (a prefetch one layer
// ahead), a recomputed one until that reader. What a recompute reads
// stays: r_t + o_x + r_x <= 1.
//
// This is POET's per-tensor formulation (each tensor paged out or
// rematerialised once, its times fixed by the schedule), not Checkmate's
// recompute-at-any-stage programme. The load is not the pool: the choice
// is planned and checked as every plan is (two iterations in the pool),
// and where fragmentation makes it miss, the budget the programme sees is
// lowered by what was missing and it is solved again, three times at most.
#pragma once

#include <cstdint>

#include "engine/core/network.h"
#include "engine/device/kernel_queries.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/accudnn_schedule.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

struct OptimalChoice {
  // CBC found a choice that saves enough at every step (where a lowered
  // limit is out of reach, the choice before it, which does not fit).
  bool feasible = false;
  bool proven = false;    // ... and proved it optimal within the time limit
  bool fits = false;      // its schedule's pool fits the budget
  Schedule train;         // planned as mode hybrid with the choice's lists
  Prediction predicted;   // in the budget's pool (where it does not fit there: as predict(), no waits)
  std::size_t limit_bytes = 0;  // the load limit the choice was solved for (the budget, or lower)
  double objective_us = 0;      // the programme's cost of the choice
  double bound_us = 0;      // CBC's lower bound on the optimum
  double seconds = 0;       // wall time in CBC, all solves together
  int solves = 0;
  int offloaded = 0, recomputed = 0;
  int variables = 0, constraints = 0;  // of the last programme
};

// `train`: mode hybrid's settings with a budget (std::invalid_argument
// without one). `time_limit_s`: CBC's limit per solve.
OptimalChoice solve_optimal(const Network& network, std::int64_t batch, const PlanSettings& train,
                            const KernelQueries& kernels, const PerfModel& model, double time_limit_s);

}  // namespace tidepool
