// oneDNN batch normalisation against the double reference: training and
// inference forward, backward, and the running-statistics update that
// CpuKernels does by hand on top of oneDNN.
#include "reference/batchnorm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::describe;
using testing::nan_filled;
using testing::random_floats;
using testing::to_double;

std::vector<BatchNormShape> shapes() { return {{4, 8, 5, 5}, {3, 3, 7, 6}, {8, 16, 1, 1}, {2, 32, 4, 4}}; }

// Inputs with a per-channel offset and spread, so that a mean or variance
// computed over the wrong axis is visibly wrong.
struct Data {
  std::vector<float> x, gamma, beta, dy, running_mean, running_var;

  explicit Data(const BatchNormShape& s) {
    const std::size_t count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    x = random_floats(count, 11);
    const std::int64_t plane = s.h * s.w;
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t c = (static_cast<std::int64_t>(i) / plane) % s.c;
      x[i] = x[i] * (1.0f + 0.25f * static_cast<float>(c % 4)) + 0.3f * static_cast<float>(c % 5);
    }
    gamma = random_floats(static_cast<std::size_t>(s.c), 12, 0.5f, 1.5f);
    beta = random_floats(static_cast<std::size_t>(s.c), 13);
    dy = random_floats(count, 14);
    running_mean = random_floats(static_cast<std::size_t>(s.c), 15);
    running_var = random_floats(static_cast<std::size_t>(s.c), 16, 0.5f, 2.0f);
  }
};

TEST(BatchNormKernel, MatchesReferenceForwardTraining) {
  CpuKernels k;
  for (const BatchNormShape& s : shapes()) {
    SCOPED_TRACE(describe(s));
    const Data d(s);
    std::vector<float> y = nan_filled(d.x.size()), mean = nan_filled(d.gamma.size()),
                       var = nan_filled(d.gamma.size());
    std::vector<float> rm = d.running_mean, rv = d.running_var;
    k.batchnorm_forward_train(s, d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(),
                              var.data(), rm.data(), rv.data(), nullptr);

    std::vector<double> y_ref(d.x.size()), mean_ref(d.gamma.size()), var_ref(d.gamma.size());
    std::vector<double> rm_ref = to_double(d.running_mean), rv_ref = to_double(d.running_var);
    const auto xd = to_double(d.x), gd = to_double(d.gamma), bd = to_double(d.beta);
    reference::batchnorm_forward_train(s, xd.data(), gd.data(), bd.data(), y_ref.data(),
                                       mean_ref.data(), var_ref.data(), rm_ref.data(),
                                       rv_ref.data());
    EXPECT_TRUE(all_close(y, y_ref, 1e-4, 1e-4));
    EXPECT_TRUE(all_close(mean, mean_ref, 1e-5, 1e-5));
    EXPECT_TRUE(all_close(var, var_ref, 1e-4, 1e-5));
    EXPECT_TRUE(all_close(rm, rm_ref, 1e-5, 1e-5));
    EXPECT_TRUE(all_close(rv, rv_ref, 1e-4, 1e-5));
  }
}

TEST(BatchNormKernel, MatchesReferenceForwardInference) {
  CpuKernels k;
  for (const BatchNormShape& s : shapes()) {
    SCOPED_TRACE(describe(s));
    const Data d(s);
    std::vector<float> y = nan_filled(d.x.size());
    k.batchnorm_forward_infer(s, d.x.data(), d.gamma.data(), d.beta.data(), d.running_mean.data(),
                              d.running_var.data(), y.data());
    std::vector<double> y_ref(d.x.size());
    const auto xd = to_double(d.x), gd = to_double(d.gamma), bd = to_double(d.beta),
               rm = to_double(d.running_mean), rv = to_double(d.running_var);
    reference::batchnorm_forward_infer(s, xd.data(), gd.data(), bd.data(), rm.data(), rv.data(),
                                       y_ref.data());
    EXPECT_TRUE(all_close(y, y_ref, 1e-5, 1e-5));
  }
}

TEST(BatchNormKernel, MatchesReferenceBackward) {
  CpuKernels k;
  for (const BatchNormShape& s : shapes()) {
    SCOPED_TRACE(describe(s));
    const Data d(s);
    std::vector<float> y(d.x.size()), mean(d.gamma.size()), var(d.gamma.size());
    k.batchnorm_forward_train(s, d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(),
                              var.data(), nullptr, nullptr, nullptr);
    std::vector<float> dx = nan_filled(d.x.size()), dgamma = nan_filled(d.gamma.size()),
                       dbeta = nan_filled(d.gamma.size());
    k.batchnorm_backward(s, d.x.data(), d.dy.data(), d.gamma.data(), mean.data(), var.data(),
                         dx.data(), dgamma.data(), dbeta.data(), nullptr);

    std::vector<double> dx_ref(d.x.size()), dg_ref(d.gamma.size()), db_ref(d.gamma.size());
    const auto xd = to_double(d.x), dyd = to_double(d.dy), gd = to_double(d.gamma),
               md = to_double(mean), vd = to_double(var);
    reference::batchnorm_backward(s, xd.data(), dyd.data(), gd.data(), md.data(), vd.data(),
                                  dx_ref.data(), dg_ref.data(), db_ref.data());
    EXPECT_TRUE(all_close(dx, dx_ref, 1e-3, 1e-4));
    EXPECT_TRUE(all_close(dgamma, dg_ref, 1e-4, 1e-4));
    EXPECT_TRUE(all_close(dbeta, db_ref, 1e-4, 1e-4));
  }
}

TEST(BatchNormKernel, RunningStatistics) {
  // One channel, N = n*h*w = 4 values {1, 2, 3, 6}: mean 3, biased variance
  // 3.5, unbiased 14/3. Two steps from (0, 1) with momentum 0.1:
  //   mean: 0.3, then 0.57;  var: 0.9 + 0.1*14/3, then 0.9*that + 0.1*14/3.
  CpuKernels k;
  BatchNormShape s{2, 1, 1, 2};
  s.momentum = 0.1f;
  const std::vector<float> x = {1.0f, 2.0f, 3.0f, 6.0f};
  const float gamma = 1.0f, beta = 0.0f;
  std::vector<float> y(4);
  float mean = 0.0f, var = 0.0f, running_mean = 0.0f, running_var = 1.0f;

  k.batchnorm_forward_train(s, x.data(), &gamma, &beta, y.data(), &mean, &var, &running_mean,
                            &running_var, nullptr);
  EXPECT_NEAR(mean, 3.0f, 1e-6f);
  EXPECT_NEAR(var, 3.5f, 1e-5f) << "saved_var is the biased batch variance";
  EXPECT_NEAR(running_mean, 0.3f, 1e-6f);
  const double unbiased = 14.0 / 3.0;
  const double var1 = 0.9 * 1.0 + 0.1 * unbiased;
  EXPECT_NEAR(running_var, var1, 1e-5) << "running_var tracks the unbiased variance";

  k.batchnorm_forward_train(s, x.data(), &gamma, &beta, y.data(), &mean, &var, &running_mean,
                            &running_var, nullptr);
  EXPECT_NEAR(running_mean, 0.9 * 0.3 + 0.1 * 3.0, 1e-6);
  EXPECT_NEAR(running_var, 0.9 * var1 + 0.1 * unbiased, 1e-5);

  // Normalised with the batch statistics: zero mean, unit (biased) variance.
  double sum = 0.0, sq = 0.0;
  for (float v : y) {
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(sum / 4.0, 0.0, 1e-6);
  EXPECT_NEAR(sq / 4.0, 3.5 / (3.5 + s.eps), 1e-5);
}

TEST(BatchNormKernel, RunningStatisticsConvergeToPopulation) {
  // Repeated steps on the same batch: the running mean converges to the
  // batch mean and the running variance to the unbiased batch variance.
  // Momentum 0.5 forgets the starting point (0, 1) within 40 steps.
  CpuKernels k;
  BatchNormShape s{4, 8, 3, 3};
  s.momentum = 0.5f;
  const Data d(s);
  std::vector<float> y(d.x.size()), mean(8), var(8), rm(8, 0.0f), rv(8, 1.0f);
  for (int step = 0; step < 40; ++step) {
    k.batchnorm_forward_train(s, d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(),
                              var.data(), rm.data(), rv.data(), nullptr);
  }
  const double count = static_cast<double>(s.n * s.h * s.w);
  for (std::int64_t c = 0; c < s.c; ++c) {
    EXPECT_NEAR(rm[c], mean[c], 1e-5);
    EXPECT_NEAR(rv[c], var[c] * count / (count - 1.0), 1e-5);
  }
}

}  // namespace
}  // namespace tidepool
