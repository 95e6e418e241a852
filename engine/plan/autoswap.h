// AutoSwap (SmartPool/AutoSwap paper §IV): offload only as many
// activations as it takes to bring the peak memory load under a limit,
// choosing them by priority score, instead of vDNN's fixed layer choice.
//
// Candidates are the tensors vDNN's `all` would offload (the inputs that
// backward reads) whose absence spans the peak of the load without
// swapping, and that are not tiny (at least 1 MiB, or 1/256 of the peak
// for small networks). A candidate is absent from the step after its last
// forward access to the step before its first backward access; time is
// counted in compute steps (the schedule is planned before anything has
// been timed, and transfer time is left out: the paper's DOA subtracts it):
//
//   DOA    the compute steps of the absence;
//   AOA    DOA times the tensor's bytes;
//   WDOA   the area under the load curve without swapping over the absence;
//   SWDOA  WDOA recomputed after each choice on the load the choices so far
//          leave (submodular), which follows the peak as it moves;
//   BO     the paper's fifth (§IV-C): a·AOA + b·DOA + c·WDOA + d·SWDOA,
//          weights from MemorySettings::swap_weights. The four differ by
//          orders of magnitude (AOA is in byte-steps, DOA in steps), so
//          each is divided by its largest value over the candidates on the
//          load without swapping (SWDOA by WDOA's, its value before any
//          choice) before they are mixed; with d > 0 the mix is recomputed
//          after each choice, as SWDOA is. The paper standardises the
//          scores and lets the weights range over [-1, 1]; ours are
//          non-negative, since every score argues for taking a tensor, and
//          only their ratios matter. search_swap_weights
//          (engine/plan/swap_weight_search.h) finds them from about 30
//          measured or simulated iterations.
//
// Tensors are chosen in descending score until the modelled peak is at or
// under the limit; the MemoryPlan then checks the real schedule's peak and
// takes more while it is above, and searches the limit that fits the
// budget (engine/plan/memory_plan.cpp). These functions only read
// schedules: nothing here plans one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/schedule/schedule.h"

namespace tidepool {

struct SwapCandidate {
  int tensor = -1;
  std::size_t bytes = 0;   // as placed
  int out_step = 0;        // its last forward access (a step of the base schedule)
  int in_step = 0;         // its first backward access
  double score = 0;        // when it was chosen (SWDOA, and BO with d > 0: on the load at that point)
};

// `base`: the schedule with nothing offloaded; `all`: the same with vDNN's
// `all` (same settings otherwise). The candidates in the order AutoSwap
// chooses them; `weights` is read for SwapScore::bo only.
std::vector<SwapCandidate> autoswap_order(const Schedule& base, const Schedule& all, SwapScore score,
                                          const SwapWeights& weights = {});

// The weights scaled to sum to 1: the mix's order does not change with
// their scale, so this is the one form that is printed and compared. All
// zero (no mix at all) reads as equal weights. Throws std::invalid_argument
// for a negative or non-finite weight.
SwapWeights normalised(const SwapWeights& weights);

// The candidates to offload so that the modelled peak load of `base` is at
// or under `limit`, as indices into `order`, ascending: the paper's greedy
// choice (from the front until the peak is under), then, ours, each chosen
// one given up again, the last chosen first, where the peak stays under
// without it (a greedy choice can overshoot: a later, larger tensor may
// cover what an earlier one was taken for). All of them when the limit
// cannot be met.
std::vector<std::size_t> autoswap_choose(const Schedule& base, const std::vector<SwapCandidate>& order,
                                         std::size_t limit);

}  // namespace tidepool
