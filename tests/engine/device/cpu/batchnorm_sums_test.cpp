// --sync-bn's kernels on the cpu device: a batch cut in two "ranks" whose
// sums are added up normalises, updates the running statistics and
// back-propagates as the whole batch does in one batchnorm_forward_train
// and batchnorm_backward, in NCHW and in the channel-blocked layout, and
// the whole batch agrees with the double reference.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "reference/batchnorm.h"
#include "testing/kernel_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::describe;
using testing::nan_filled;
using testing::random_floats;
using testing::to_double;

// The shapes, each in NCHW and, where the channels divide, in the cpu
// table's channel block. Even n: the halves are the two ranks.
std::vector<BatchNormShape> shapes(std::int64_t block) {
  std::vector<BatchNormShape> out;
  for (BatchNormShape s : {BatchNormShape{4, 8, 5, 5}, BatchNormShape{6, 16, 3, 3}, BatchNormShape{8, 24, 1, 1},
                           BatchNormShape{4, 3, 7, 6}, BatchNormShape{10, 5, 1, 1}}) {
    out.push_back(s);
    if (channel_blocked(s.c, block)) {
      s.channel_block = block;
      out.push_back(s);
    }
  }
  return out;
}

std::string describe_layout(const BatchNormShape& s) {
  return describe(s) + (s.channel_block ? " blocked by " + std::to_string(s.channel_block) : " nchw");
}

// A per-element offset and spread that differ between channels (in either
// layout the values are random; the offset makes the mean far from 0, where
// E[x²] - E[x]² would lose precision in f32).
std::vector<float> offset_values(std::size_t count, std::uint32_t seed) {
  std::vector<float> v = random_floats(count, seed);
  for (std::size_t i = 0; i < count; ++i) v[i] = v[i] * (1.0f + 0.25f * static_cast<float>(i % 4)) + 3.0f;
  return v;
}

struct Halves {
  BatchNormShape half;
  std::size_t elements = 0;  // per half
};
Halves halves_of(const BatchNormShape& s) {
  Halves h{s, 0};
  h.half.n = s.n / 2;
  h.elements = static_cast<std::size_t>(h.half.n * s.c * s.h * s.w);
  return h;
}

std::vector<double> added(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

TEST(BatchNormSums, TwoHalvesWithAddedSumsNormaliseAsTheWholeBatch) {
  CpuKernels k;
  for (BatchNormShape s : shapes(k.channel_block())) {
    SCOPED_TRACE(describe_layout(s));
    s.momentum = 0.25f;
    const auto c = static_cast<std::size_t>(s.c);
    const std::vector<float> x = offset_values(static_cast<std::size_t>(s.n * s.c * s.h * s.w), 21);
    const std::vector<float> gamma = random_floats(c, 22, 0.5f, 1.5f), beta = random_floats(c, 23);
    const std::vector<float> rm0 = random_floats(c, 24), rv0 = random_floats(c, 25, 0.5f, 2.0f);

    std::vector<float> y(x.size()), mean(c), var(c), rm = rm0, rv = rv0;
    k.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(), rm.data(),
                              rv.data(), nullptr);

    const Halves h = halves_of(s);
    const std::size_t count = static_cast<std::size_t>(batchnorm_sums_count(s.c));
    std::vector<double> sums0(count), sums1(count);
    k.batchnorm_sums(h.half, x.data(), sums0.data());
    k.batchnorm_sums(h.half, x.data() + h.elements, sums1.data());
    EXPECT_EQ(sums0[2 * c], static_cast<double>(h.half.n * s.h * s.w)) << "the count closes the sums";
    const std::vector<double> sums = added(sums0, sums1);
    std::vector<float> y_halves = nan_filled(x.size());
    for (int r = 0; r < 2; ++r) {
      std::vector<float> m = nan_filled(c), v = nan_filled(c), rank_rm = rm0, rank_rv = rv0;
      k.batchnorm_forward_with_sums(h.half, x.data() + r * h.elements, gamma.data(), beta.data(), sums.data(),
                                    y_halves.data() + r * h.elements, m.data(), v.data(), rank_rm.data(),
                                    rank_rv.data());
      EXPECT_TRUE(all_close(m, to_double(mean), 1e-6, 1e-6)) << "rank " << r;
      EXPECT_TRUE(all_close(v, to_double(var), 1e-5, 1e-6)) << "rank " << r << ": the biased variance";
      EXPECT_TRUE(all_close(rank_rm, to_double(rm), 1e-6, 1e-6)) << "rank " << r;
      EXPECT_TRUE(all_close(rank_rv, to_double(rv), 1e-5, 1e-6)) << "rank " << r << ": unbiased over the whole count";
    }
    EXPECT_TRUE(all_close(y_halves, to_double(y), 1e-5, 1e-5));

    if (s.channel_block == 0) {  // the double reference is NCHW
      std::vector<double> y_ref(x.size()), m_ref(c), v_ref(c), rm_ref = to_double(rm0), rv_ref = to_double(rv0);
      const auto xd = to_double(x), gd = to_double(gamma), bd = to_double(beta);
      reference::batchnorm_forward_train(s, xd.data(), gd.data(), bd.data(), y_ref.data(), m_ref.data(), v_ref.data(),
                                         rm_ref.data(), rv_ref.data());
      EXPECT_TRUE(all_close(y_halves, y_ref, 1e-5, 1e-5));
    }
  }
}

TEST(BatchNormSums, TwoHalvesWithAddedSumsBackPropagateAsTheWholeBatch) {
  CpuKernels k;
  for (const BatchNormShape& s : shapes(k.channel_block())) {
    SCOPED_TRACE(describe_layout(s));
    const auto c = static_cast<std::size_t>(s.c);
    const std::vector<float> x = offset_values(static_cast<std::size_t>(s.n * s.c * s.h * s.w), 31);
    const std::vector<float> dy = random_floats(x.size(), 32);
    const std::vector<float> gamma = random_floats(c, 33, 0.5f, 1.5f), beta = random_floats(c, 34);
    std::vector<float> y(x.size()), mean(c), var(c);
    k.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(), nullptr,
                              nullptr, nullptr);
    std::vector<float> dx(x.size()), dgamma(c), dbeta(c);
    k.batchnorm_backward(s, x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(), dgamma.data(),
                         dbeta.data(), nullptr);

    // Each half with the whole batch's statistics, as the forward sums give them.
    const Halves h = halves_of(s);
    const std::size_t count = static_cast<std::size_t>(batchnorm_sums_count(s.c));
    std::vector<double> sums[2] = {std::vector<double>(count), std::vector<double>(count)};
    std::vector<float> dg[2] = {nan_filled(c), nan_filled(c)}, db[2] = {nan_filled(c), nan_filled(c)};
    for (int r = 0; r < 2; ++r)
      k.batchnorm_backward_sums(h.half, x.data() + r * h.elements, dy.data() + r * h.elements, mean.data(),
                                var.data(), sums[r].data(), dg[r].data(), db[r].data());
    const std::vector<double> summed = added(sums[0], sums[1]);
    std::vector<float> dx_halves = nan_filled(x.size());
    for (int r = 0; r < 2; ++r)
      k.batchnorm_backward_with_sums(h.half, x.data() + r * h.elements, dy.data() + r * h.elements, gamma.data(),
                                     mean.data(), var.data(), summed.data(), dx_halves.data() + r * h.elements);
    EXPECT_TRUE(all_close(dx_halves, to_double(dx), 1e-4, 1e-5));
    // The parameter gradients are each half's own, which add up to the
    // whole batch's (the gradient all-reduce's sum).
    std::vector<double> dg_sum(c), db_sum(c);
    for (std::size_t ch = 0; ch < c; ++ch) {
      dg_sum[ch] = static_cast<double>(dg[0][ch]) + dg[1][ch];
      db_sum[ch] = static_cast<double>(db[0][ch]) + db[1][ch];
    }
    EXPECT_TRUE(all_close(dgamma, dg_sum, 1e-4, 1e-5));
    EXPECT_TRUE(all_close(dbeta, db_sum, 1e-4, 1e-5));
  }
}

TEST(BatchNormSums, TheSecondHalvesRefuseSumsNoFirstHalfWrote) {
  CpuKernels k;
  const BatchNormShape s{2, 4, 3, 3};
  std::vector<float> x(2 * 4 * 9, 1.0f), one(4, 1.0f), out(x.size()), m(4), v(4);
  const std::vector<double> zeros(static_cast<std::size_t>(batchnorm_sums_count(s.c)), 0.0);
  EXPECT_THROW(k.batchnorm_forward_with_sums(s, x.data(), one.data(), one.data(), zeros.data(), out.data(), m.data(),
                                             v.data(), nullptr, nullptr),
               std::logic_error);
  EXPECT_THROW(k.batchnorm_backward_with_sums(s, x.data(), x.data(), one.data(), m.data(), v.data(), zeros.data(),
                                              out.data()),
               std::logic_error);
}

// A constant channel: E[x²] - E[x]² comes out a rounding either side of
// zero; the variance is never negative and the output is beta, as the
// fused kernel gives.
TEST(BatchNormSums, AConstantChannelHasVarianceZero) {
  CpuKernels k;
  const BatchNormShape s{4, 2, 3, 3};
  std::vector<float> x(4 * 2 * 9, 0.1f);
  const std::vector<float> gamma = {1.5f, 0.5f}, beta = {0.25f, -1.0f};
  std::vector<double> sums(static_cast<std::size_t>(batchnorm_sums_count(s.c)));
  k.batchnorm_sums(s, x.data(), sums.data());
  std::vector<float> y(x.size()), m(2), v(2);
  k.batchnorm_forward_with_sums(s, x.data(), gamma.data(), beta.data(), sums.data(), y.data(), m.data(), v.data(),
                                nullptr, nullptr);
  for (float var : v) {
    EXPECT_GE(var, 0.0f);
    EXPECT_LT(var, 1e-12f);
  }
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], beta[(i / 9) % 2], 1e-5) << i;
}

}  // namespace
}  // namespace tidepool
