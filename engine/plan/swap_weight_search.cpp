#include "engine/plan/swap_weight_search.h"

#include <span>
#include <stdexcept>
#include <string>

#include "engine/plan/bayes_opt.h"

namespace tidepool {
namespace {

// The search's point, in [0, 1]^3, as weights on the simplex (summing to
// 1) by stick-breaking: AOA takes x0 of the whole, DOA x1 of the rest, WDOA
// x2 of what is left, SWDOA the remainder. Only the weights' ratios change
// AutoSwap's order, so the simplex holds every mix once, and no point
// means all-zero weights, which would mean no mix at all. We tried the
// obvious alternative, [0, 1]^4 scaled to sum 1 before use: the value is
// then constant along every ray from the origin, which the model cannot
// represent, and on a bowl around a known best mix (4 targets, 3 seeds,
// 30 tries) it stopped 0.4 to 95 µs above the minimum of a 40-2000 µs
// range, against at most 3.3 µs this way.
SwapWeights weights_at(std::span<const double> x) {
  const double rest = 1 - x[0], after_doa = rest * (1 - x[1]);
  return {.aoa = x[0], .doa = rest * x[1], .wdoa = after_doa * x[2], .swdoa = after_doa * (1 - x[2])};
}

}  // namespace

SwapWeightSearch search_swap_weights(const std::function<double(const SwapWeights&)>& overhead,
                                     const SwapWeightSearchOptions& options) {
  if (options.evaluations < 1)
    throw std::invalid_argument("search_swap_weights needs at least 1 evaluation, not " +
                                std::to_string(options.evaluations));
  SwapWeightSearch search;
  auto objective = [&](std::span<const double> x) {
    const SwapWeights w = weights_at(x);
    const double us = overhead(w);
    search.history.push_back({w, us});
    return us;
  };
  BayesOptOptions bo{.evaluations = options.evaluations, .seed = options.seed};
  // Equal weights first, then each score alone (where x0 = 1 any x1, x2
  // give AOA alone: the middle of that face); three hypercube points after
  // them give the model values inside the simplex too.
  bo.initial_points = {{0.25, 1.0 / 3.0, 0.5}, {1, 0.5, 0.5}, {0, 1, 0.5}, {0, 0, 1}, {0, 0, 0}};
  bo.initial_design = static_cast<int>(bo.initial_points.size()) + 3;
  const BayesOptResult r = bayes_minimise(objective, std::vector<double>(3, 0.0), std::vector<double>(3, 1.0), bo);
  search.best = weights_at(r.best_x);
  search.overhead_us = r.best_value;
  return search;
}

}  // namespace tidepool
