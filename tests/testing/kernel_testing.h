// Helpers shared by the kernel tests: seeded random fills, float <-> double
// conversion, tolerance checks against the double-precision references, and
// central-difference gradients for the gradient checks.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "engine/device/kernels.h"

namespace tidepool::testing {

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Pairwise distinct values at least `gap` apart, in random order: max
// pooling's gradient is only defined where the window maximum is unique,
// and a finite difference of +-eps must not change which element wins.
inline std::vector<float> distinct_floats(std::size_t n, std::uint32_t seed, float gap = 0.01f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = (static_cast<float>(i) - static_cast<float>(n) / 2.0f) * gap;
  }
  std::mt19937 gen(seed);
  std::shuffle(v.begin(), v.end(), gen);
  return v;
}

// n consecutive 16-bit patterns from `first`, shuffled: pairwise distinct
// 16-bit values, so no pooling window has tied maxima (which two
// implementations may break differently). 7919 is prime, so i * 7919 % n
// visits every offset once unless n is a multiple of it.
inline std::vector<std::uint16_t> distinct_16bit(std::size_t n, std::uint16_t first) {
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint16_t>(first + (i * 7919) % n);
  return v;
}

// A pooling's f32 passes on `k`, the reference the 16-bit pooling tests
// compare against: y and dx of x and dy, and the bytes its saved buffer took.
struct PoolPasses {
  std::vector<float> y, dx;
  std::size_t saved_bytes = 0;
};
inline PoolPasses f32_pool_passes(Kernels& k, const PoolShape& s, const std::vector<float>& x,
                                  const std::vector<float>& dy) {
  PoolPasses out{std::vector<float>(dy.size()), std::vector<float>(x.size()), k.pool_saved_bytes(s)};
  std::vector<std::byte> saved(out.saved_bytes);
  k.pool_forward(s, x.data(), out.y.data(), saved.empty() ? nullptr : saved.data());
  k.pool_backward(s, x.data(), dy.data(), saved.empty() ? nullptr : saved.data(), out.dx.data());
  return out;
}

// Values whose magnitude is at least `margin`, for kinks at zero (relu):
// a finite difference across the kink measures neither side's slope.
inline std::vector<float> away_from_zero(std::size_t n, std::uint32_t seed, float margin = 0.05f) {
  std::vector<float> v = random_floats(n, seed);
  for (float& x : v) x = std::copysign(margin + std::fabs(x), x);
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

inline std::vector<float> to_float(const std::vector<double>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  return out;
}

// Output buffers start as NaN so a kernel that skips an element (instead of
// overwriting it, as the contract says) fails loudly.
inline std::vector<float> nan_filled(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

template <class T>
double max_abs_diff(const std::vector<T>& a, const std::vector<double>& b) {
  double m = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// |actual - expected| <= atol + rtol * |expected| everywhere; NaN fails.
// `actual` is a kernel's float output or a double reference result.
template <class T>
::testing::AssertionResult all_close(const std::vector<T>& actual,
                                     const std::vector<double>& expected, double rtol,
                                     double atol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  }
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1.0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i];
    const double e = expected[i];
    const double err = std::fabs(a - e);
    const double allowed = atol + rtol * std::fabs(e);
    if (!(err <= allowed)) {
      ++bad;
      const double excess =
          std::isnan(err) ? std::numeric_limits<double>::infinity() : err - allowed;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream msg;
  msg << bad << " of " << actual.size() << " elements differ; worst at [" << worst
      << "]: " << actual[worst] << " vs expected " << expected[worst] << " (max abs diff "
      << max_abs_diff(actual, expected) << ", rtol " << rtol << ", atol " << atol << ")";
  return ::testing::AssertionFailure() << msg.str();
}

// sum(y * r): the scalar every gradient check differentiates, so that
// dL/dy = r is a dense, non-uniform upstream gradient.
inline double dot(const std::vector<double>& y, const std::vector<double>& r) {
  double s = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

// Central differences of `loss` with respect to every element of `v`
// (perturbed in place and restored). In double with eps = 1e-6 the
// truncation and rounding errors are both around 1e-10 relative.
inline std::vector<double> numeric_gradient(std::vector<double>& v,
                                            const std::function<double()>& loss,
                                            double eps = 1e-6) {
  std::vector<double> g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double saved = v[i];
    v[i] = saved + eps;
    const double up = loss();
    v[i] = saved - eps;
    const double down = loss();
    v[i] = saved;
    g[i] = (up - down) / (2.0 * eps);
  }
  return g;
}

}  // namespace tidepool::testing
