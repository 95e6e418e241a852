// A small Bayesian optimiser over a box, for objectives where each value
// costs a measured (or simulated) training iteration, so that a few dozen
// calls must do: AutoSwap's score mix is the first (SmartPool/AutoSwap
// §IV-C, engine/plan/swap_weight_search.h), after Snoek, Larochelle and
// Adams 2012, the paper's reference [42].
//
//   const BayesOptResult r = bayes_minimise(
//       [&](std::span<const double> x) { return overhead_us(x[0], x[1]); },
//       {0.0, 0.0}, {1.0, 1.0}, {.evaluations = 30, .seed = 7});
//   r.best_x, r.best_value;              // the best point evaluated
//   for (const BayesOptPoint& p : r.history) ...  // every call, in order
//
// The first calls are an initial design (the caller's points, then a
// seeded Latin hypercube); each later one fits a Gaussian process to the
// values so far and evaluates the point of largest expected improvement.
// Everything random comes from one std::mt19937_64 seeded with
// options.seed, so the same seed and objective give the same history.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tidepool {

struct BayesOptPoint {
  std::vector<double> x;
  double value = 0;
};

struct BayesOptOptions {
  int evaluations = 30;  // calls of the objective, the initial design's included (the paper's ~30)
  // The initial design: `initial_points` first, as given, then seeded
  // Latin-hypercube points until there are `initial_design` (0: twice the
  // dimensions, at least 3). The model needs a few values to fit anything.
  int initial_design = 0;
  std::vector<std::vector<double>> initial_points;
  std::uint64_t seed = 1;
};

struct BayesOptResult {
  std::vector<double> best_x;  // the lowest value's point among those evaluated
  double best_value = 0;
  std::vector<BayesOptPoint> history;  // each call's point and value, in the order made
};

// Minimises `objective` over the box [lower, upper] in options.evaluations
// calls. A value that is not finite (a failed evaluation) stays in the
// history but counts as the worst value so far for the model, so that the
// search moves away from it. Throws std::invalid_argument for bounds that
// are empty, of different lengths, not finite or not lower < upper, fewer
// than one evaluation, a negative initial design, or an initial point of
// the wrong length or outside the box.
BayesOptResult bayes_minimise(const std::function<double(std::span<const double>)>& objective,
                              const std::vector<double>& lower, const std::vector<double>& upper,
                              const BayesOptOptions& options = {});

}  // namespace tidepool
