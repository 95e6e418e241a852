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
//          leave (submodular), which follows the peak as it moves.
//
// Tensors are chosen in descending score until the modelled peak is at or
// under the limit; the planner then checks the real schedule's peak and
// takes more while it is above (engine/planner.cpp). The paper's fifth
// score, a Bayesian-optimised mix of the four by measured overhead, needs
// ~30 timed iterations and is not implemented.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/schedule.h"

namespace tidepool {

struct SwapCandidate {
  int tensor = -1;
  std::size_t bytes = 0;   // as placed
  int out_step = 0;        // its last forward access (a step of the base schedule)
  int in_step = 0;         // its first backward access
  double score = 0;        // when it was chosen (SWDOA: on the load at that point)
};

// `base`: the schedule with nothing offloaded; `all`: the same with vDNN's
// `all` (same settings otherwise). The candidates in the order AutoSwap
// chooses them.
std::vector<SwapCandidate> autoswap_order(const Schedule& base, const Schedule& all, SwapScore score);

// How many of `order`, taken from the front, bring the modelled peak load
// of `base` to `limit` or under; order.size() when all of them do not.
std::size_t autoswap_count(const Schedule& base, const std::vector<SwapCandidate>& order, std::size_t limit);

}  // namespace tidepool
