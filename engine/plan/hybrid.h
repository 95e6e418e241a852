// Mode hybrid: for each activation backward reads, keep it, offload it or
// recompute it, for the least iteration time the performance model
// predicts in the budget (Capuchin's per-tensor choice between swapping
// and recomputing; POET's joint paging and rematerialisation).
//
//   1. Nothing is taken off the device when everything fits.
//   2. Otherwise three mixes, each activation taken off the device by a
//      way with a cost (an offload: free where AccUDNN's model hides its
//      copies under compute, else its prefetch's time; a recompute: its
//      layer's forward time), a recompute's reads then staying:
//      "mix", a prefix of all of them, each by its cheaper way, ranked by
//      cost per byte, whose schedule fits, found by bisection (fitting is
//      not monotone in the prefix, so not always the shortest); "peak
//      mix", from keeping everything, while the load peaks above the
//      budget, the cheapest per byte of those away at the peak's step; and
//      "tight mix", from everything offloaded, the changes that save the
//      most time per byte of room they take while the load stays under
//      the budget (hybrid.cpp's descend()). The last two take the budget
//      as a load limit, lowered by what the pool then missed until a plan
//      fits and raised again by bisection.
//   3. The mixes compete with the fixed policies that fit the same budget
//      (the alternatives the MemoryPlan passes: all, conv, aconv, AutoSwap,
//      AccUDNN, recompute, recompute-cheap) on the time predicted in the
//      budget's pool (predict_in_pool), so hybrid is never predicted slower
//      than the best of them.
//
// Every choice is planned as mode hybrid with its tensor lists
// (PlanSettings::swapped, ::recomputed), so re-planning and the window
// treat it like any other mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/network.h"
#include "engine/device/kernel_queries.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/accudnn_schedule.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

// One activation's ways off the device and what each costs by the
// performance model: what hybrid ranks by and `plan --optimal` minimises
// (engine/plan/optimal.h).
struct WayOff {
  int tensor = -1;
  std::size_t bytes = 0;  // rounded as the pool rounds it
  // An offload: 0 where AccUDNN's model hides its copies under compute
  // (with no budget), else its prefetch's time; infinity: not offloadable.
  double offload_us = 0;
  // A recompute: its layer's forward time; infinity: it cannot be rebuilt
  // from tensors that stay.
  double recompute_us = 0;
  // The tensors backward reads that its recompute reads (through layers
  // whose outputs backward does not read): they must stay on the device.
  std::vector<int> reads;
  // Step indices in the schedule that keeps everything: the last step that
  // reads it in forward, its first backward reader's backward step, and
  // the backward step before that one (a prefetch one layer ahead brings
  // it back there).
  int last_forward_step = -1, first_backward_step = -1, prefetch_step = -1;
  // Whether it is off the device at step k when offloaded / recomputed.
  bool away_offloaded(int k) const { return k > last_forward_step && k < prefetch_step; }
  bool away_recomputed(int k) const { return k > last_forward_step && k < first_backward_step; }
};
struct WaysOff {
  Schedule keep;                  // everything kept
  std::vector<std::size_t> load;  // keep's load after each step (Schedule::load_after_steps), once
  std::vector<WayOff> tensors;
};
WaysOff ways_off(const Network& network, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                 const PerfModel& model);

struct HybridChoice {
  Schedule train;
  Prediction predicted;
  // Where it came from: "keep" (everything fits), "mix", "peak mix" or
  // "tight mix" (step 2), or the name of the fixed mode that was faster.
  std::string from;
  // The least pool any candidate it weighed needs (what a refusal names).
  std::size_t least_pool_bytes = 0;
};

// `train`: the run's train settings, mode hybrid, its budget (0: none,
// everything kept). `alternatives`: the fixed policies' train schedules at
// the same batch and budget, as the MemoryPlan planned them.
HybridChoice choose_hybrid(const Network& network, std::int64_t batch, const PlanSettings& train,
                           const KernelQueries& kernels, const PerfModel& model,
                           const std::vector<Schedule>& alternatives);

// Mode hybrid's schedule for its lists: these tensors offloaded, those
// recomputed (in any order).
Schedule plan_hybrid(const Network& network, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                     std::vector<int> offloaded, std::vector<int> recomputed);

// `s`'s offloads and recomputes as mode hybrid's lists, planned again:
// the same steps as `s`.
Schedule as_hybrid(const Network& network, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                   const Schedule& s);

}  // namespace tidepool
