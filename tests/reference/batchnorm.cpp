#include "reference/batchnorm.h"

#include <cmath>
#include <cstdint>

namespace tidepool::reference {
namespace {

// Flat index of element (n, c, i) with i running over the h*w plane.
inline std::int64_t at(const BatchNormShape& s, std::int64_t n, std::int64_t c, std::int64_t i) {
  return (n * s.c + c) * s.h * s.w + i;
}

}  // namespace

void batchnorm_forward_train(const BatchNormShape& s, const double* x, const double* gamma,
                             const double* beta, double* y, double* saved_mean, double* saved_var,
                             double* running_mean, double* running_var) {
  const std::int64_t plane = s.h * s.w;
  const double count = static_cast<double>(s.n * plane);
  for (std::int64_t c = 0; c < s.c; ++c) {
    double sum = 0.0;
    for (std::int64_t n = 0; n < s.n; ++n) {
      for (std::int64_t i = 0; i < plane; ++i) sum += x[at(s, n, c, i)];
    }
    const double mean = sum / count;
    double sq = 0.0;
    for (std::int64_t n = 0; n < s.n; ++n) {
      for (std::int64_t i = 0; i < plane; ++i) {
        const double d = x[at(s, n, c, i)] - mean;
        sq += d * d;
      }
    }
    const double var = sq / count;
    const double inv_std = 1.0 / std::sqrt(var + static_cast<double>(s.eps));
    for (std::int64_t n = 0; n < s.n; ++n) {
      for (std::int64_t i = 0; i < plane; ++i) {
        const std::int64_t j = at(s, n, c, i);
        y[j] = gamma[c] * (x[j] - mean) * inv_std + beta[c];
      }
    }
    saved_mean[c] = mean;
    saved_var[c] = var;
    if (running_mean != nullptr && running_var != nullptr) {
      const double m = s.momentum;
      const double unbiased = count > 1.0 ? var * count / (count - 1.0) : var;
      running_mean[c] = (1.0 - m) * running_mean[c] + m * mean;
      running_var[c] = (1.0 - m) * running_var[c] + m * unbiased;
    }
  }
}

void batchnorm_forward_infer(const BatchNormShape& s, const double* x, const double* gamma,
                             const double* beta, const double* running_mean,
                             const double* running_var, double* y) {
  const std::int64_t plane = s.h * s.w;
  for (std::int64_t c = 0; c < s.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(running_var[c] + static_cast<double>(s.eps));
    for (std::int64_t n = 0; n < s.n; ++n) {
      for (std::int64_t i = 0; i < plane; ++i) {
        const std::int64_t j = at(s, n, c, i);
        y[j] = gamma[c] * (x[j] - running_mean[c]) * inv_std + beta[c];
      }
    }
  }
}

void batchnorm_backward(const BatchNormShape& s, const double* x, const double* dy,
                        const double* gamma, const double* saved_mean, const double* saved_var,
                        double* dx, double* dgamma, double* dbeta) {
  const std::int64_t plane = s.h * s.w;
  const double count = static_cast<double>(s.n * plane);
  for (std::int64_t c = 0; c < s.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(saved_var[c] + static_cast<double>(s.eps));
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (std::int64_t n = 0; n < s.n; ++n) {
      for (std::int64_t i = 0; i < plane; ++i) {
        const std::int64_t j = at(s, n, c, i);
        const double xhat = (x[j] - saved_mean[c]) * inv_std;
        sum_dy += dy[j];
        sum_dy_xhat += dy[j] * xhat;
      }
    }
    dbeta[c] = sum_dy;
    dgamma[c] = sum_dy_xhat;
    // dx = gamma / std * (dy - mean(dy) - xhat * mean(dy * xhat)): the two
    // subtracted terms are the paths through the batch mean and variance.
    for (std::int64_t n = 0; n < s.n; ++n) {
      for (std::int64_t i = 0; i < plane; ++i) {
        const std::int64_t j = at(s, n, c, i);
        const double xhat = (x[j] - saved_mean[c]) * inv_std;
        dx[j] = gamma[c] * inv_std * (dy[j] - sum_dy / count - xhat * sum_dy_xhat / count);
      }
    }
  }
}

}  // namespace tidepool::reference
