// The Bayesian optimiser: it finds known minima in the paper's budget of
// about 30 evaluations, does better than random search with as many, gives
// the same history for the same seed, and refuses what means nothing.
#include "engine/plan/bayes_opt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>

namespace tidepool {
namespace {

using Objective = std::function<double(std::span<const double>)>;

// Axes of different curvature, so that one length scale for all would fit badly.
double quadratic_2d(std::span<const double> x) {
  return std::pow(x[0] - 1.3, 2) + 3.0 * std::pow(x[1] + 2.1, 2);
}

double quadratic_4d(std::span<const double> x) {
  const double at[] = {0.2, 0.7, 0.4, 0.85}, curvature[] = {1.0, 4.0, 0.5, 2.0};
  double f = 0;
  for (int i = 0; i < 4; ++i) f += curvature[i] * std::pow(x[i] - at[i], 2);
  return f;
}

// Three global minima of 0.397887 in [-5, 10] x [0, 15].
double branin(std::span<const double> x) {
  constexpr double pi = std::numbers::pi;
  const double b = 5.1 / (4 * pi * pi), c = 5 / pi, t = 1 / (8 * pi);
  return std::pow(x[1] - b * x[0] * x[0] + c * x[0] - 6, 2) + 10 * (1 - t) * std::cos(x[0]) + 10;
}
constexpr double kBraninMinimum = 0.397887;

const std::vector<double> kUnit4Lower(4, 0.0), kUnit4Upper(4, 1.0);

TEST(BayesOpt, FindsAShiftedQuadraticIn2D) {
  const BayesOptResult r = bayes_minimise(quadratic_2d, {-5, -5}, {5, 5}, {.evaluations = 30, .seed = 1});
  ASSERT_EQ(r.history.size(), 30u);
  EXPECT_LT(r.best_value, 1e-4);
  EXPECT_NEAR(r.best_x[0], 1.3, 0.01);
  EXPECT_NEAR(r.best_x[1], -2.1, 0.01);
}

TEST(BayesOpt, FindsAShiftedQuadraticIn4D) {
  const BayesOptResult r = bayes_minimise(quadratic_4d, kUnit4Lower, kUnit4Upper, {.evaluations = 30, .seed = 1});
  ASSERT_EQ(r.history.size(), 30u);
  EXPECT_LT(r.best_value, 1e-4);  // within about 0.01 of the minimum on each axis
}

TEST(BayesOpt, FindsBraninsMinimum) {
  const BayesOptResult r = bayes_minimise(branin, {-5, 0}, {10, 15}, {.evaluations = 30, .seed = 1});
  EXPECT_NEAR(r.best_value, kBraninMinimum, 0.01);
}

TEST(BayesOpt, TheBestIsTheLowestOfTheHistory) {
  const BayesOptResult r = bayes_minimise(branin, {-5, 0}, {10, 15}, {.evaluations = 12, .seed = 4});
  ASSERT_EQ(r.history.size(), 12u);
  double lowest = std::numeric_limits<double>::infinity();
  for (const BayesOptPoint& p : r.history) {
    ASSERT_EQ(p.x.size(), 2u);
    EXPECT_GE(p.x[0], -5);
    EXPECT_LE(p.x[0], 10);
    EXPECT_GE(p.x[1], 0);
    EXPECT_LE(p.x[1], 15);
    EXPECT_DOUBLE_EQ(p.value, branin(p.x)) << "each value is the objective's at its point";
    lowest = std::min(lowest, p.value);
  }
  EXPECT_EQ(r.best_value, lowest);
  EXPECT_EQ(branin(r.best_x), r.best_value);
}

TEST(BayesOpt, TheSameSeedGivesTheSameHistory) {
  const BayesOptOptions options{.evaluations = 20, .seed = 11};
  const BayesOptResult a = bayes_minimise(quadratic_4d, kUnit4Lower, kUnit4Upper, options);
  const BayesOptResult b = bayes_minimise(quadratic_4d, kUnit4Lower, kUnit4Upper, options);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (std::size_t i = 0; i < a.history.size(); ++i) {
    EXPECT_EQ(a.history[i].x, b.history[i].x) << "call " << i;
    EXPECT_EQ(a.history[i].value, b.history[i].value) << "call " << i;
  }
  const BayesOptResult c = bayes_minimise(quadratic_4d, kUnit4Lower, kUnit4Upper, {.evaluations = 20, .seed = 12});
  EXPECT_NE(a.history.front().x, c.history.front().x) << "another seed, another design";
}

TEST(BayesOpt, BeatsRandomSearchWithAsManyEvaluations) {
  for (std::uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    double random_best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < 30; ++i) {
      const double x[] = {unit(rng), unit(rng), unit(rng), unit(rng)};
      random_best = std::min(random_best, quadratic_4d(x));
    }
    const BayesOptResult r =
        bayes_minimise(quadratic_4d, kUnit4Lower, kUnit4Upper, {.evaluations = 30, .seed = seed});
    EXPECT_LT(r.best_value, random_best / 100) << "random search's best: " << random_best;
  }
}

TEST(BayesOpt, InitialPointsComeFirstAsGiven) {
  const std::vector<std::vector<double>> given = {{0.5, 0.5, 0.5, 0.5}, {1, 0, 0, 0}, {0, 0, 0, 1}};
  const BayesOptResult r = bayes_minimise(quadratic_4d, kUnit4Lower, kUnit4Upper,
                                          {.evaluations = 10, .initial_design = 6, .initial_points = given});
  ASSERT_EQ(r.history.size(), 10u);
  for (std::size_t i = 0; i < given.size(); ++i) EXPECT_EQ(r.history[i].x, given[i]);
}

TEST(BayesOpt, FailedEvaluationsStayInTheHistoryAndAreAvoided) {
  // Half the box fails; the minimum is just inside the other half.
  auto failing = [](std::span<const double> x) {
    return x[0] > 0.5 ? std::numeric_limits<double>::infinity() : std::pow(x[0] - 0.4, 2) + std::pow(x[1] - 0.6, 2);
  };
  const BayesOptResult r = bayes_minimise(failing, {0, 0}, {1, 1}, {.evaluations = 30, .seed = 5});
  int failed = 0;
  for (const BayesOptPoint& p : r.history) failed += std::isinf(p.value);
  EXPECT_GT(failed, 0) << "the design reaches the failing half";
  EXPECT_LE(failed, 8) << "and the model keeps away from it (half of 30 tries at random)";
  EXPECT_LT(r.best_value, 0.005);
}

TEST(BayesOpt, RefusesWhatMeansNothing) {
  auto expect_refused = [](const std::vector<double>& lower, const std::vector<double>& upper,
                           const BayesOptOptions& options, const std::string& part) {
    try {
      bayes_minimise(quadratic_2d, lower, upper, options);
      ADD_FAILURE() << "accepted; expected: " << part;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  const double inf = std::numeric_limits<double>::infinity();
  expect_refused({}, {}, {}, "bounds must be of one length");
  expect_refused({0, 0}, {1}, {}, "bounds must be of one length");
  expect_refused({0, 1}, {1, 1}, {}, "axis 1 has the bounds [1, 1]");
  expect_refused({0, 2}, {1, 1}, {}, "axis 1 has the bounds [2, 1]");
  expect_refused({0, -inf}, {1, 1}, {}, "axis 1");
  expect_refused({0, std::nan("")}, {1, 1}, {}, "axis 1");
  expect_refused({0, 0}, {1, 1}, {.evaluations = 0}, "at least 1 evaluation");
  expect_refused({0, 0}, {1, 1}, {.initial_design = -1}, "initial design");
  expect_refused({0, 0}, {1, 1}, {.initial_points = {{0.5}}}, "initial point 0");
  expect_refused({0, 0}, {1, 1}, {.initial_points = {{0.5, 0.5}, {0.5, 1.5}}}, "initial point 1");
}

TEST(BayesOpt, OneEvaluationIsTheDesignsFirstPoint) {
  const BayesOptResult r = bayes_minimise(quadratic_2d, {-5, -5}, {5, 5}, {.evaluations = 1});
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_EQ(r.best_x, r.history[0].x);
}

}  // namespace
}  // namespace tidepool
