// AutoSwap's fifth score, its weights (SmartPool/AutoSwap §IV-C): the mix
// a·AOA + b·DOA + c·WDOA + d·SWDOA (engine/plan/autoswap.h) is tuned by
// Bayesian optimisation (engine/plan/bayes_opt.h) of the overhead that its
// choice of tensors causes, one iteration at the load limit per try, about
// 30 tries. This is the search; the caller says how one try is measured
// (timed on a device, or on the simulated one), e.g.
//
//   const SwapWeightSearch s = search_swap_weights([&](const SwapWeights& w) {
//     settings.swap_weights = w;
//     return iteration_us(settings) - iteration_us(without_offloads);
//   });
//   settings.swap_weights = s.best;
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/schedule/memory_settings.h"

namespace tidepool {

struct SwapWeightTrial {
  SwapWeights weights;  // as the evaluator saw them: summing to 1
  double overhead_us = 0;
};

struct SwapWeightSearch {
  SwapWeights best;  // the lowest overhead's, summing to 1
  double overhead_us = 0;
  std::vector<SwapWeightTrial> history;  // each try, in order: the search's convergence
};

struct SwapWeightSearchOptions {
  int evaluations = 30;  // the paper: "after updating about 30 times, the weights become stable"
  std::uint64_t seed = 1;
};

// Minimises `overhead` (µs against the iteration without offloads) over
// the weights, each try's summing to 1 (how they are searched:
// engine/plan/swap_weight_search.cpp). A try that fails may return
// infinity; the search moves away from it. The first tries are equal weights (the default) and each
// score alone, so the result is never worse than any of the four scores
// or their even mix, the paper's "BO safeguards the overhead to be no
// larger than the minimum of the 4 PS". Throws std::invalid_argument for
// fewer than one evaluation.
SwapWeightSearch search_swap_weights(const std::function<double(const SwapWeights&)>& overhead,
                                     const SwapWeightSearchOptions& options = {});

}  // namespace tidepool
