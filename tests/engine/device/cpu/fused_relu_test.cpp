// --fuse relu's kernels on the cpu device: batch norm with oneDNN's fused
// ReLU, and the residual add that clamps as it sums, against the unfused
// kernels run one after the other. A fused forward writes what batch norm
// then ReLU write (+0 where oneDNN's ReLU writes -0: they compare equal);
// a fused backward, fed the same gradient, gives what ReLU's backward then
// batch norm's give.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"

namespace tidepool {
namespace {

using testing::random_floats;

std::vector<BatchNormShape> shapes() {
  // NCHW, nChw8c (the cpu device's layout for channel counts it blocks),
  // and a 2-D [n, c] input.
  return {{.n = 4, .c = 8, .h = 5, .w = 5},
          {.n = 3, .c = 16, .h = 6, .w = 7, .channel_block = 8},
          {.n = 8, .c = 16, .h = 1, .w = 1}};
}

struct Data {
  std::vector<float> x, gamma, beta, dy;
  explicit Data(const BatchNormShape& s) {
    const std::size_t count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    x = random_floats(count, 21);
    gamma = random_floats(static_cast<std::size_t>(s.c), 22, 0.5f, 1.5f);
    beta = random_floats(static_cast<std::size_t>(s.c), 23);
    dy = random_floats(count, 24);
  }
};

void expect_equal_values(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  int cut = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << what << " at " << i;
    cut += want[i] == 0.0f;
  }
  EXPECT_GT(cut, 0) << what << ": the ReLU cut nothing, so the test shows nothing";
}

TEST(FusedRelu, BatchNormWithItsReluIsBatchNormThenRelu) {
  CpuKernels k;
  for (BatchNormShape s : shapes()) {
    SCOPED_TRACE(::testing::Message() << s.n << "x" << s.c << "x" << s.h << "x" << s.w << " block " << s.channel_block);
    const Data d(s);
    const std::size_t count = d.x.size(), channels = d.gamma.size();
    // Unfused: batch norm, ReLU; backward ReLU's, then batch norm's.
    std::vector<float> bn(count), y(count), mean(channels), var(channels), rm(channels, 0.0f), rv(channels, 1.0f);
    k.batchnorm_forward_train(s, d.x.data(), d.gamma.data(), d.beta.data(), bn.data(), mean.data(), var.data(),
                              rm.data(), rv.data(), nullptr);
    k.relu_forward(static_cast<std::int64_t>(count), DType::f32, bn.data(), y.data());
    std::vector<float> dbn(count), dx(count), dgamma(channels), dbeta(channels);
    k.relu_backward(static_cast<std::int64_t>(count), DType::f32, y.data(), d.dy.data(), dbn.data());
    k.batchnorm_backward(s, d.x.data(), dbn.data(), d.gamma.data(), mean.data(), var.data(), dx.data(), dgamma.data(),
                         dbeta.data(), nullptr);

    BatchNormShape f = s;
    f.relu = true;
    const std::size_t mask_bytes = k.batchnorm_relu_mask_bytes(f);
    EXPECT_GT(mask_bytes, 0u) << "oneDNN keeps a mask from forward for backward";
    EXPECT_LE(mask_bytes, count) << "a bit or a byte a value, not a copy of y";
    EXPECT_EQ(k.batchnorm_relu_mask_bytes(s), 0u) << "no ReLU, no mask";
    std::vector<unsigned char> mask(mask_bytes);
    std::vector<float> fy(count), fmean(channels), fvar(channels), frm(channels, 0.0f), frv(channels, 1.0f);
    k.batchnorm_forward_train(f, d.x.data(), d.gamma.data(), d.beta.data(), fy.data(), fmean.data(), fvar.data(),
                              frm.data(), frv.data(), mask.data());
    expect_equal_values(fy, y, "y");
    EXPECT_EQ(fmean, mean);
    EXPECT_EQ(fvar, var);
    EXPECT_EQ(frm, rm);
    EXPECT_EQ(frv, rv);
    std::vector<float> fdx(count), fdgamma(channels), fdbeta(channels);
    k.batchnorm_backward(f, d.x.data(), d.dy.data(), d.gamma.data(), fmean.data(), fvar.data(), fdx.data(),
                         fdgamma.data(), fdbeta.data(), mask.data());
    for (std::size_t i = 0; i < count; ++i) ASSERT_NEAR(fdx[i], dx[i], 1e-5f * (1.0f + std::abs(dx[i]))) << i;
    for (std::size_t c = 0; c < channels; ++c) {
      EXPECT_NEAR(fdgamma[c], dgamma[c], 1e-5f * (1.0f + std::abs(dgamma[c]))) << c;
      EXPECT_NEAR(fdbeta[c], dbeta[c], 1e-5f * (1.0f + std::abs(dbeta[c]))) << c;
    }

    // Evaluation: the running statistics, then the ReLU; no mask.
    std::vector<float> iy(count), fiy(count);
    k.batchnorm_forward_infer(s, d.x.data(), d.gamma.data(), d.beta.data(), rm.data(), rv.data(), iy.data());
    k.relu_forward(static_cast<std::int64_t>(count), DType::f32, iy.data(), iy.data());
    k.batchnorm_forward_infer(f, d.x.data(), d.gamma.data(), d.beta.data(), rm.data(), rv.data(), fiy.data());
    expect_equal_values(fiy, iy, "inference y");
  }
}

TEST(FusedRelu, BatchNormWithItsReluRefusesToRunWithoutItsMask) {
  CpuKernels k;
  BatchNormShape s{.n = 2, .c = 8, .h = 3, .w = 3, .relu = true};
  const Data d(s);
  std::vector<float> y(d.x.size()), mean(8), var(8);
  EXPECT_THROW(k.batchnorm_forward_train(s, d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(),
                                         var.data(), nullptr, nullptr, nullptr),
               std::invalid_argument);
}

TEST(FusedRelu, AddWithItsReluIsAddThenReluAndKeepsNaN) {
  CpuKernels k;
  const std::int64_t count = 100000;  // above the threads' share, so the parallel loop runs
  std::vector<float> a = random_floats(count, 31), b = random_floats(count, 32);
  a[5] = std::numeric_limits<float>::quiet_NaN();
  a[6] = std::numeric_limits<float>::infinity();
  a[7] = -std::numeric_limits<float>::infinity();
  std::vector<float> sum(count), y(count), fused(count);
  k.add_forward(count, DType::f32, a.data(), b.data(), sum.data());
  k.relu_forward(count, DType::f32, sum.data(), y.data());
  k.add_relu_forward(count, DType::f32, a.data(), b.data(), fused.data());
  EXPECT_TRUE(std::isnan(fused[5])) << "a NaN goes through, as fp16's loss scaling needs";
  EXPECT_EQ(fused[6], std::numeric_limits<float>::infinity());
  EXPECT_EQ(fused[7], 0.0f) << "max(-inf, 0)";
  int cut = 0;
  for (std::size_t i = 0; i < fused.size(); ++i) {
    if (i >= 5 && i <= 7) continue;
    ASSERT_EQ(fused[i], y[i]) << i;
    cut += y[i] == 0.0f;
  }
  EXPECT_GT(cut, count / 4);
}

}  // namespace
}  // namespace tidepool
