#include "engine/plan/bayes_opt.h"

#include <nlopt.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <numbers>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tidepool {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// --- randomness ---------------------------------------------------------------
// From the engine's raw output rather than std::uniform_real_distribution
// and std::shuffle, whose algorithms each standard library chooses: the
// same seed then gives the same history with libstdc++ and libc++.

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

VectorXd uniform_point(int d, std::mt19937_64& rng) {
  VectorXd u(d);
  for (int i = 0; i < d; ++i) u[i] = uniform01(rng);
  return u;
}

// n points in the unit cube, one in each of n slices along every axis: a
// few points cover the box more evenly than as many uniform ones.
std::vector<VectorXd> latin_hypercube(int n, int d, std::mt19937_64& rng) {
  std::vector<VectorXd> points(static_cast<std::size_t>(n), VectorXd(d));
  std::vector<int> slice(static_cast<std::size_t>(n));
  for (int axis = 0; axis < d; ++axis) {
    for (int i = 0; i < n; ++i) slice[static_cast<std::size_t>(i)] = i;
    for (std::size_t i = slice.size(); i-- > 1;)  // Fisher-Yates
      std::swap(slice[i], slice[rng() % (i + 1)]);
    for (int i = 0; i < n; ++i)
      points[static_cast<std::size_t>(i)][axis] = (slice[static_cast<std::size_t>(i)] + uniform01(rng)) / n;
  }
  return points;
}

// --- NLopt --------------------------------------------------------------------

using NloptHandle = std::unique_ptr<nlopt_opt_s, decltype(&nlopt_destroy)>;

template <class F>
double call(unsigned n, const double* x, double* /*gradient: derivative-free*/, void* f) {
  return (*static_cast<F*>(f))(std::span<const double>(x, n));
}

// Minimises f from x (moved in place) within [lower, upper]. BOBYQA: the
// likelihood and the expected improvement are cheap, smooth and a few
// dimensions wide, where a bounded quadratic-model method needs no
// gradient code to get wrong. Returns f at the x it leaves.
template <class F>
double local_minimise(F& f, std::vector<double>& x, const std::vector<double>& lower, const std::vector<double>& upper,
                      int max_evaluations, double first_step) {
  const auto n = static_cast<unsigned>(x.size());
  NloptHandle opt(nlopt_create(NLOPT_LN_BOBYQA, n), &nlopt_destroy);
  if (!opt) throw std::bad_alloc();
  nlopt_set_lower_bounds(opt.get(), lower.data());
  nlopt_set_upper_bounds(opt.get(), upper.data());
  nlopt_set_min_objective(opt.get(), &call<F>, &f);
  nlopt_set_maxeval(opt.get(), max_evaluations);
  nlopt_set_xtol_rel(opt.get(), 1e-6);
  nlopt_set_initial_step1(opt.get(), first_step);
  for (unsigned i = 0; i < n; ++i) x[i] = std::clamp(x[i], lower[i], upper[i]);
  // Whatever the result code (a round-off stop is common once BOBYQA has
  // converged), x is where NLopt left it: its best point, or the start
  // where it refused to begin. f is evaluated there again, so the value
  // returned is x's.
  double value = 0;
  nlopt_optimize(opt.get(), x.data(), &value);
  return f(std::span<const double>(x));
}

// --- the Gaussian process -----------------------------------------------------
// Matérn 5/2 with a length per axis (ARD), as Snoek et al. recommend for
// tuning: the squared exponential's samples are infinitely smooth, which
// measured overheads are not, and the axes (here AutoSwap's four scores)
// need not matter equally. Hyperparameters, packed for NLopt as
// [log length_1..d, log signal variance, log noise variance]:
//   lengths in [0.01, 10] of the unit cube: from much finer than the
//     design's spacing to "the function barely bends over the box";
//   signal variance in [0.01, 100] of the standardised values;
//   noise variance in [1e-10, 1]: a noise term because measured overheads
//     are noisy, and because expected improvement piles points up near the
//     optimum, where a noiseless kernel matrix is nearly singular. The
//     floor is low because the values are standardised over the whole
//     box: at 1e-6 the model could not tell apart values near the optimum
//     that differ by less than a thousandth of the spread of all of them,
//     and stopped short of it (a quadratic's minimum 100 times less
//     closely, in tests/engine/plan/bayes_opt_test.cpp's functions). A
//     simulated device's overheads are deterministic, and measured ones
//     raise the fitted noise themselves.

constexpr double kLogLengthLow = -4.605170185988091, kLogLengthHigh = 2.302585092994046;  // log 0.01, log 10
constexpr double kLogSignalLow = -4.605170185988091, kLogSignalHigh = 4.605170185988092;  // log 0.01, log 100
constexpr double kLogNoiseLow = -23.025850929940457, kLogNoiseHigh = 0.0;                 // log 1e-10, log 1

double matern52(const VectorXd& a, const VectorXd& b, const VectorXd& inverse_length) {
  const double r = std::sqrt(5.0 * (a - b).cwiseProduct(inverse_length).squaredNorm());
  return (1.0 + r + r * r / 3.0) * std::exp(-r);
}

class GaussianProcess {
 public:
  // `x`: points in the unit cube; `y`: their values, standardised.
  GaussianProcess(std::vector<VectorXd> x, VectorXd y) : x_(std::move(x)), y_(std::move(y)) {}

  int dimensions() const { return static_cast<int>(x_.front().size()); }

  // Maximises the log marginal likelihood from `warm` (the last fit), a
  // middling guess and a few seeded random starts: it has local optima (a
  // short length that explains every value as noise-free wiggle, a long one
  // that calls it noise), and one start can land in the wrong one.
  void fit(const std::vector<double>& warm, std::mt19937_64& rng) {
    const int d = dimensions();
    std::vector<double> lower(static_cast<std::size_t>(d), kLogLengthLow), upper(static_cast<std::size_t>(d), kLogLengthHigh);
    lower.push_back(kLogSignalLow), upper.push_back(kLogSignalHigh);
    lower.push_back(kLogNoiseLow), upper.push_back(kLogNoiseHigh);
    std::vector<std::vector<double>> starts;
    if (!warm.empty()) starts.push_back(warm);
    std::vector<double> middling(static_cast<std::size_t>(d), std::log(0.3));
    middling.push_back(0.0);              // unit signal variance, as standardised
    middling.push_back(std::log(1e-3));  // a little noise
    starts.push_back(middling);
    for (int k = 0; k < 3; ++k) {
      std::vector<double> s(lower.size());
      for (std::size_t i = 0; i < s.size(); ++i) s[i] = lower[i] + uniform01(rng) * (upper[i] - lower[i]);
      starts.push_back(s);
    }
    auto nll = [this](std::span<const double> theta) { return negative_log_likelihood(theta); };
    double best = std::numeric_limits<double>::infinity();
    for (std::vector<double>& s : starts) {
      const double v = local_minimise(nll, s, lower, upper, 100 * (d + 2), 0.5);
      if (v < best) {
        best = v;
        theta_ = s;
      }
    }
    factorise(theta_);
  }

  const std::vector<double>& theta() const { return theta_; }

  // Expected improvement below `best` (standardised) by at least `margin`
  // at u, from the posterior of the noise-free function: it is what the
  // next evaluation may gain, and the noise is no part of it.
  double expected_improvement(const VectorXd& u, double best, double margin) const {
    const VectorXd k = cross(u);
    const double mean = k.dot(alpha_);
    const VectorXd v = llt_.matrixL().solve(k);
    const double sd = std::sqrt(std::max(signal_ - v.squaredNorm(), 1e-18));
    const double z = (best - margin - mean) / sd;
    const double cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
    return std::max(sd * (z * cdf + pdf), 0.0);
  }

 private:
  // Builds K for theta and factorises it; false where it is not positive
  // definite even with jitter. The jitter, from a millionth of a
  // millionth of the signal variance upwards, only guards the round-off of
  // points that almost coincide: the noise term does the regularising.
  bool factorise(std::span<const double> theta) {
    const int n = static_cast<int>(x_.size()), d = dimensions();
    VectorXd inverse_length(d);
    for (int i = 0; i < d; ++i) inverse_length[i] = std::exp(-theta[static_cast<std::size_t>(i)]);
    signal_ = std::exp(theta[static_cast<std::size_t>(d)]);
    const double noise = std::exp(theta[static_cast<std::size_t>(d) + 1]);
    inverse_length_ = inverse_length;
    MatrixXd k(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j)
        k(i, j) = k(j, i) = signal_ * matern52(x_[static_cast<std::size_t>(i)], x_[static_cast<std::size_t>(j)], inverse_length);
    for (double jitter = 1e-12 * signal_; jitter <= 1e-4 * signal_; jitter *= 100) {
      MatrixXd kn = k;
      kn.diagonal().array() += noise + jitter;
      llt_.compute(kn);
      if (llt_.info() == Eigen::Success) {
        alpha_ = llt_.solve(y_);
        return true;
      }
    }
    return false;
  }

  // -log p(y | x, theta) = y'K^-1 y / 2 + log|K| / 2 + n log(2 pi) / 2.
  double negative_log_likelihood(std::span<const double> theta) {
    if (!factorise(theta)) return 1e300;
    const double log_det = 2.0 * llt_.matrixLLT().diagonal().array().log().sum();
    return 0.5 * y_.dot(alpha_) + 0.5 * log_det + 0.5 * static_cast<double>(y_.size()) * std::log(2.0 * std::numbers::pi);
  }

  VectorXd cross(const VectorXd& u) const {
    VectorXd k(static_cast<int>(x_.size()));
    for (std::size_t i = 0; i < x_.size(); ++i) k[static_cast<int>(i)] = signal_ * matern52(u, x_[i], inverse_length_);
    return k;
  }

  std::vector<VectorXd> x_;
  VectorXd y_;
  std::vector<double> theta_;
  VectorXd inverse_length_;
  double signal_ = 1;
  Eigen::LLT<MatrixXd> llt_;
  VectorXd alpha_;
};

// The values as the model sees them: a value that is not finite becomes
// the worst finite one (0 while there is none), then all are standardised
// to mean 0 and deviation 1, so that the zero-mean prior and the
// hyperparameters' bounds fit any objective's units (microseconds of
// overhead or a test function's values alike).
VectorXd standardised(const std::vector<double>& values) {
  double worst = -std::numeric_limits<double>::infinity();
  for (double v : values)
    if (std::isfinite(v)) worst = std::max(worst, v);
  if (!std::isfinite(worst)) worst = 0;
  VectorXd y(static_cast<int>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) y[static_cast<int>(i)] = std::isfinite(values[i]) ? values[i] : worst;
  const double mean = y.mean();
  const double sd = std::sqrt((y.array() - mean).square().mean());
  return (y.array() - mean) / (sd > 0 ? sd : 1.0);
}

// The next point: expected improvement maximised by BOBYQA from the best
// points so far (the optimum is often near them) and from the best of a
// seeded random screen (expected improvement is flat almost everywhere
// far from the data, where a local method started at random would stall).
VectorXd next_point(const GaussianProcess& gp, const std::vector<VectorXd>& u, const VectorXd& y,
                    std::mt19937_64& rng) {
  const int d = gp.dimensions();
  const double best = y.minCoeff();
  // No margin: improvement by any amount counts. A margin in standardised
  // units (0.01 is common) is a fixed share of the spread of all values,
  // which near the optimum can exceed all the improvement left, and
  // expected improvement then vanishes everywhere, leaving the search to
  // wander (over eight seeds, Branin's best ended up to 0.12 above its
  // minimum with 0.01, within 0.004 with none). The model's own
  // uncertainty explores enough.
  constexpr double kMargin = 0.0;
  auto minus_log_ei = [&](std::span<const double> x) {
    const VectorXd p = Eigen::Map<const VectorXd>(x.data(), static_cast<int>(x.size()));
    return -std::log(std::max(gp.expected_improvement(p, best, kMargin), 1e-300));
  };
  std::vector<std::pair<double, VectorXd>> screen;
  for (int i = 0; i < 500 * d; ++i) {
    VectorXd p = uniform_point(d, rng);
    screen.emplace_back(minus_log_ei(std::span<const double>(p.data(), static_cast<std::size_t>(d))), std::move(p));
  }
  auto first = [](const auto& a, const auto& b) { return a.first < b.first; };
  const std::size_t random_starts = std::min<std::size_t>(5, screen.size());
  std::partial_sort(screen.begin(), screen.begin() + static_cast<std::ptrdiff_t>(random_starts), screen.end(), first);
  std::vector<VectorXd> starts;
  for (std::size_t i = 0; i < random_starts; ++i) starts.push_back(screen[i].second);
  std::vector<int> by_value(static_cast<std::size_t>(y.size()));
  for (int i = 0; i < y.size(); ++i) by_value[static_cast<std::size_t>(i)] = i;
  std::stable_sort(by_value.begin(), by_value.end(), [&](int a, int b) { return y[a] < y[b]; });
  for (std::size_t i = 0; i < std::min<std::size_t>(3, by_value.size()); ++i)
    starts.push_back(u[static_cast<std::size_t>(by_value[i])]);

  const std::vector<double> lower(static_cast<std::size_t>(d), 0.0), upper(static_cast<std::size_t>(d), 1.0);
  VectorXd chosen = starts.front();
  double chosen_value = std::numeric_limits<double>::infinity();
  for (const VectorXd& s : starts) {
    std::vector<double> x(s.data(), s.data() + d);
    const double v = local_minimise(minus_log_ei, x, lower, upper, 50 * (d + 1), 0.05);
    if (v < chosen_value) {
      chosen_value = v;
      chosen = Eigen::Map<const VectorXd>(x.data(), d);
    }
  }
  // A point already evaluated would spend a call to learn nothing (the
  // model has nothing it expects to gain anywhere): explore instead.
  for (const VectorXd& seen : u)
    if ((seen - chosen).norm() < 1e-6) return uniform_point(d, rng);
  return chosen;
}

void check(const std::vector<double>& lower, const std::vector<double>& upper, const BayesOptOptions& options) {
  auto refuse = [](const std::string& why) { throw std::invalid_argument("bayes_minimise: " + why); };
  if (lower.empty() || lower.size() != upper.size()) {
    std::ostringstream msg;
    msg << "the bounds must be of one length of at least 1, not " << lower.size() << " and " << upper.size();
    refuse(msg.str());
  }
  for (std::size_t i = 0; i < lower.size(); ++i)
    if (!std::isfinite(lower[i]) || !std::isfinite(upper[i]) || !(lower[i] < upper[i])) {
      std::ostringstream msg;
      msg << "axis " << i << " has the bounds [" << lower[i] << ", " << upper[i]
          << "]; they must be finite with the lower below the upper";
      refuse(msg.str());
    }
  if (options.evaluations < 1) refuse("it needs at least 1 evaluation, not " + std::to_string(options.evaluations));
  if (options.initial_design < 0) refuse("the initial design cannot be " + std::to_string(options.initial_design) + " points");
  for (std::size_t p = 0; p < options.initial_points.size(); ++p) {
    const std::vector<double>& x = options.initial_points[p];
    bool inside = x.size() == lower.size();
    for (std::size_t i = 0; inside && i < x.size(); ++i) inside = lower[i] <= x[i] && x[i] <= upper[i];
    if (!inside) refuse("initial point " + std::to_string(p) + " is not a point of the box");
  }
}

}  // namespace

BayesOptResult bayes_minimise(const std::function<double(std::span<const double>)>& objective,
                              const std::vector<double>& lower, const std::vector<double>& upper,
                              const BayesOptOptions& options) {
  check(lower, upper, options);
  const int d = static_cast<int>(lower.size());
  std::mt19937_64 rng(options.seed);
  BayesOptResult result;
  std::vector<VectorXd> u;  // the points evaluated, in the unit cube the model works in
  std::vector<double> values;

  const VectorXd low = Eigen::Map<const VectorXd>(lower.data(), d), high = Eigen::Map<const VectorXd>(upper.data(), d);
  auto to_box = [&](const VectorXd& p) {  // clamped: round-off may step outside
    const VectorXd x = (low + p.cwiseProduct(high - low)).cwiseMax(low).cwiseMin(high);
    return std::vector<double>(x.data(), x.data() + d);
  };
  auto to_unit = [&](const std::vector<double>& x) {
    return VectorXd((Eigen::Map<const VectorXd>(x.data(), d) - low).cwiseQuotient(high - low));
  };
  auto evaluate = [&](std::vector<double> x, VectorXd p) {
    const double v = objective(std::span<const double>(x));
    result.history.push_back({std::move(x), v});
    u.push_back(std::move(p));
    values.push_back(v);
  };
  auto done = [&] { return static_cast<int>(values.size()) >= options.evaluations; };

  // The caller's points exactly as given (the objective sees what the
  // caller wrote, not a round trip through the unit cube), then the
  // hypercube's.
  for (const std::vector<double>& x : options.initial_points)
    if (!done()) evaluate(x, to_unit(x));
  const int design = options.initial_design > 0 ? options.initial_design : std::max(3, 2 * d);
  const int random = std::max(0, design - static_cast<int>(options.initial_points.size()));
  for (const VectorXd& p : latin_hypercube(random, d, rng))
    if (!done()) evaluate(to_box(p), p);

  std::vector<double> theta;
  while (!done()) {
    const VectorXd y = standardised(values);
    GaussianProcess gp(u, y);
    gp.fit(theta, rng);
    theta = gp.theta();
    const VectorXd p = next_point(gp, u, y, rng);
    evaluate(to_box(p), p);
  }

  // NaN compares false with everything: it never becomes the best.
  std::size_t best = 0;
  for (std::size_t i = 1; i < values.size(); ++i)
    if (values[i] < values[best] || std::isnan(values[best])) best = i;
  result.best_x = result.history[best].x;
  result.best_value = result.history[best].value;
  return result;
}

}  // namespace tidepool
