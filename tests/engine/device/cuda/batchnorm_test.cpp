// cuDNN batch normalisation against the cpu device (oneDNN): training and
// inference forward, backward, the saved batch statistics (the variance,
// which the cuda device converts from cuDNN's inverse deviation) and the
// running statistics.
//
// Tolerances: the statistics are means over n*h*w values in f32; y and the
// running statistics get 1e-4 relative and 1e-5 absolute. Backward combines
// two per-channel sums with a subtraction, so dx gets 1e-3 relative and
// 1e-4 absolute, and dgamma/dbeta (sums over n*h*w) 1e-4 relative and 1e-4
// absolute.
#include <gtest/gtest.h>

#include <iterator>
#include <cmath>
#include <string>
#include <vector>

#include "gpu_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::close_to_cpu;
using testing::describe;
using testing::GpuTest;
using testing::random_floats;

const BatchNormShape kShapes[] = {{4, 8, 5, 5}, {16, 32, 8, 8}, {32, 16, 1, 1}, {8, 64, 16, 16}};

class GpuBatchNorm : public GpuTest {};

TEST_F(GpuBatchNorm, TrainingForwardMatchesTheCpuDevice) {
  for (const BatchNormShape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto c = static_cast<std::size_t>(s.c);
    // Offset and scaled inputs, so the mean and variance are not ~0 and ~1/3.
    std::vector<float> x = random_floats(count, 11, -2.0f, 5.0f);
    const std::vector<float> gamma = random_floats(c, 12, 0.5f, 1.5f), beta = random_floats(c, 13);
    std::vector<float> rm = random_floats(c, 14), rv = random_floats(c, 15, 0.5f, 2.0f);

    std::vector<float> y(count), mean(c), var(c), cpu_rm = rm, cpu_rv = rv;
    cpu.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                var.data(), cpu_rm.data(), cpu_rv.data(), nullptr);

    float *gx = upload(x), *gg = upload(gamma), *gb = upload(beta), *grm = upload(rm),
          *grv = upload(rv);
    float *gy = nan_buffer(count), *gmean = nan_buffer(c), *gvar = nan_buffer(c);
    run([&](Kernels& k) { k.batchnorm_forward_train(s, gx, gg, gb, gy, gmean, gvar, grm, grv, nullptr); });
    EXPECT_TRUE(close_to_cpu(download(gy, count), y, 1e-4, 1e-5));
    EXPECT_TRUE(close_to_cpu(download(gmean, c), mean, 1e-4, 1e-5));
    EXPECT_TRUE(close_to_cpu(download(gvar, c), var, 1e-4, 1e-5))
        << "saved_var is the biased variance";
    EXPECT_TRUE(close_to_cpu(download(grm, c), cpu_rm, 1e-4, 1e-5));
    EXPECT_TRUE(close_to_cpu(download(grv, c), cpu_rv, 1e-4, 1e-5)) << "running_var is unbiased";
  }
}

TEST_F(GpuBatchNorm, InferenceForwardMatchesTheCpuDevice) {
  for (const BatchNormShape& s : kShapes) {
    const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto c = static_cast<std::size_t>(s.c);
    const std::vector<float> x = random_floats(count, 21, -2.0f, 5.0f);
    const std::vector<float> gamma = random_floats(c, 22, 0.5f, 1.5f), beta = random_floats(c, 23);
    const std::vector<float> rm = random_floats(c, 24), rv = random_floats(c, 25, 0.5f, 2.0f);
    std::vector<float> y(count);
    cpu.batchnorm_forward_infer(s, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                                y.data());
    float *gx = upload(x), *gg = upload(gamma), *gb = upload(beta), *grm = upload(rm),
          *grv = upload(rv);
    float* gy = nan_buffer(count);
    run([&](Kernels& k) { k.batchnorm_forward_infer(s, gx, gg, gb, grm, grv, gy); });
    EXPECT_TRUE(close_to_cpu(download(gy, count), y, 1e-5, 1e-5)) << "c=" << s.c;
  }
}

TEST_F(GpuBatchNorm, BackwardMatchesTheCpuDevice) {
  for (const BatchNormShape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto c = static_cast<std::size_t>(s.c);
    const std::vector<float> x = random_floats(count, 31, -2.0f, 5.0f),
                             dy = random_floats(count, 32);
    const std::vector<float> gamma = random_floats(c, 33, 0.5f, 1.5f), beta = random_floats(c, 34);
    // Each device's own forward provides its saved statistics, as in training.
    std::vector<float> y(count), mean(c), var(c), dx(count), dgamma(c), dbeta(c);
    cpu.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                var.data(), nullptr, nullptr, nullptr);
    cpu.batchnorm_backward(s, x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(),
                           dgamma.data(), dbeta.data(), nullptr);

    float *gx = upload(x), *gdy = upload(dy), *gg = upload(gamma), *gb = upload(beta);
    float *gy = nan_buffer(count), *gmean = nan_buffer(c), *gvar = nan_buffer(c);
    float *gdx = nan_buffer(count), *gdg = nan_buffer(c), *gdb = nan_buffer(c);
    run([&](Kernels& k) {
      k.batchnorm_forward_train(s, gx, gg, gb, gy, gmean, gvar, nullptr, nullptr, nullptr);
      k.batchnorm_backward(s, gx, gdy, gg, gmean, gvar, gdx, gdg, gdb, nullptr);
    });
    EXPECT_TRUE(close_to_cpu(download(gdx, count), dx, 1e-3, 1e-4));
    EXPECT_TRUE(close_to_cpu(download(gdg, c), dgamma, 1e-4, 1e-4));
    EXPECT_TRUE(close_to_cpu(download(gdb, c), dbeta, 1e-4, 1e-4));
  }
}

// --fuse relu: our own passes with the ReLU fused and a bit mask a value
// against the cpu device's oneDNN fused pass, with the tolerances above;
// forward's y is 0 wherever the cpu device's is, up to values that round
// across 0.
TEST_F(GpuBatchNorm, FusedReluMatchesTheCpuDevice) {
  std::vector<BatchNormShape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back({3, 5, 7, 3});  // 315 values: the last warp is partial
  for (BatchNormShape s : shapes) {
    s.relu = true;
    SCOPED_TRACE(describe(s));
    const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto c = static_cast<std::size_t>(s.c);
    const std::vector<float> x = random_floats(count, 41, -2.0f, 5.0f), dy = random_floats(count, 42);
    const std::vector<float> gamma = random_floats(c, 43, 0.5f, 1.5f), beta = random_floats(c, 44);
    std::vector<float> y(count), mean(c), var(c), dx(count), dgamma(c), dbeta(c);
    std::vector<unsigned char> mask(cpu.batchnorm_relu_mask_bytes(s));
    cpu.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(), nullptr,
                                nullptr, mask.data());
    cpu.batchnorm_backward(s, x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(), dgamma.data(),
                           dbeta.data(), mask.data());

    std::size_t mask_bytes = 0;
    run([&](Kernels& k) { mask_bytes = k.batchnorm_relu_mask_bytes(s); });
    EXPECT_EQ(mask_bytes, (count + 31) / 32 * 4) << "a bit a value, in 32-bit words";
    float *gx = upload(x), *gdy = upload(dy), *gg = upload(gamma), *gb = upload(beta);
    float *gy = nan_buffer(count), *gmean = nan_buffer(c), *gvar = nan_buffer(c), *gmask = nan_buffer(mask_bytes / 4);
    float *gdx = nan_buffer(count), *gdg = nan_buffer(c), *gdb = nan_buffer(c);
    run([&](Kernels& k) {
      k.batchnorm_forward_train(s, gx, gg, gb, gy, gmean, gvar, nullptr, nullptr, gmask);
      k.batchnorm_backward(s, gx, gdy, gg, gmean, gvar, gdx, gdg, gdb, gmask);
    });
    const std::vector<float> got = download(gy, count);
    EXPECT_TRUE(close_to_cpu(got, y, 1e-4, 1e-5));
    std::size_t zeros = 0;
    for (float v : got) zeros += v == 0.0f;
    EXPECT_GT(zeros, count / 10) << "the ReLU cut";
    EXPECT_TRUE(close_to_cpu(download(gdx, count), dx, 1e-3, 1e-4));
    EXPECT_TRUE(close_to_cpu(download(gdg, c), dgamma, 1e-4, 1e-4));
    EXPECT_TRUE(close_to_cpu(download(gdb, c), dbeta, 1e-4, 1e-4));
  }
}

// A constant channel has variance 0, so cuDNN's inverse deviation is
// 1/sqrt(eps) rounded to float, and for about half of all eps that rounds
// up: 1/invstd^2 - eps came out slightly negative. The saved variance is
// clamped at 0, and backward (which turns it back into invstd) stays finite.
TEST_F(GpuBatchNorm, TheSavedVarianceOfAConstantChannelIsNeverNegative) {
  for (int i = 1; i <= 16; ++i) {
    BatchNormShape s{4, 3, 5, 5};
    s.eps = static_cast<float>(i) * 1e-6f;
    SCOPED_TRACE("eps " + std::to_string(s.eps));
    const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto c = static_cast<std::size_t>(s.c);
    const std::vector<float> x(count, 0.75f), dy = random_floats(count, 41);
    const std::vector<float> gamma(c, 1.0f), beta(c, 0.0f);
    reset_arena();
    float *gx = upload(x), *gdy = upload(dy), *gg = upload(gamma), *gb = upload(beta);
    float *gy = nan_buffer(count), *gmean = nan_buffer(c), *gvar = nan_buffer(c);
    float *gdx = nan_buffer(count), *gdg = nan_buffer(c), *gdb = nan_buffer(c);
    run([&](Kernels& k) {
      k.batchnorm_forward_train(s, gx, gg, gb, gy, gmean, gvar, nullptr, nullptr, nullptr);
      k.batchnorm_backward(s, gx, gdy, gg, gmean, gvar, gdx, gdg, gdb, nullptr);
    });
    for (float v : download(gvar, c)) {
      EXPECT_GE(v, 0.0f);
      EXPECT_LT(v, 1e-9f);
    }
    for (float v : download(gdx, count)) ASSERT_TRUE(std::isfinite(v));
  }
}

// --sync-bn's halves against the cpu device's (cpu/batchnorm_sums.cpp): the
// sums, the forward and backward passes that finish with summed sums, and
// the running statistics, each half of the batch one "rank".
TEST_F(GpuBatchNorm, SyncBnHalvesMatchTheCpuDevice) {
  for (BatchNormShape s : kShapes) {
    SCOPED_TRACE(describe(s));
    s.n /= 2;  // each half
    const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto c = static_cast<std::size_t>(s.c);
    const auto sums_count = static_cast<std::size_t>(batchnorm_sums_count(s.c));
    const std::vector<float> x = random_floats(2 * count, 51, -2.0f, 5.0f), dy = random_floats(2 * count, 52);
    const std::vector<float> gamma = random_floats(c, 53, 0.5f, 1.5f), beta = random_floats(c, 54);
    const std::vector<float> rm0 = random_floats(c, 55), rv0 = random_floats(c, 56, 0.5f, 2.0f);

    // The cpu device: both halves' sums added, then the first half's passes.
    std::vector<double> sums(sums_count), other(sums_count);
    cpu.batchnorm_sums(s, x.data(), sums.data());
    cpu.batchnorm_sums(s, x.data() + count, other.data());
    for (std::size_t i = 0; i < sums_count; ++i) sums[i] += other[i];
    std::vector<float> y(count), mean(c), var(c), rm = rm0, rv = rv0;
    cpu.batchnorm_forward_with_sums(s, x.data(), gamma.data(), beta.data(), sums.data(), y.data(), mean.data(),
                                    var.data(), rm.data(), rv.data());
    std::vector<double> grad_sums(sums_count);
    std::vector<float> dgamma(c), dbeta(c), other_dgamma(c), other_dbeta(c), dx(count);
    cpu.batchnorm_backward_sums(s, x.data(), dy.data(), mean.data(), var.data(), grad_sums.data(), dgamma.data(),
                                dbeta.data());
    cpu.batchnorm_backward_sums(s, x.data() + count, dy.data() + count, mean.data(), var.data(), other.data(),
                                other_dgamma.data(), other_dbeta.data());
    for (std::size_t i = 0; i < sums_count; ++i) grad_sums[i] += other[i];
    cpu.batchnorm_backward_with_sums(s, x.data(), dy.data(), gamma.data(), mean.data(), var.data(),
                                     grad_sums.data(), dx.data());

    // The gpu: its own sums of the first half, the summed ones uploaded.
    reset_arena();
    float *gx = upload(x), *gdy = upload(dy), *gg = upload(gamma), *gb = upload(beta), *grm = upload(rm0),
          *grv = upload(rv0);
    double *gsums = alloc<double>(sums_count), *gsummed = upload(sums), *ggrad = alloc<double>(sums_count),
           *ggrad_summed = upload(grad_sums);
    float *gy = nan_buffer(count), *gmean = nan_buffer(c), *gvar = nan_buffer(c);
    float *gdx = nan_buffer(count), *gdg = nan_buffer(c), *gdb = nan_buffer(c);
    run([&](Kernels& k) {
      k.batchnorm_sums(s, gx, gsums);
      k.batchnorm_forward_with_sums(s, gx, gg, gb, gsummed, gy, gmean, gvar, grm, grv);
      k.batchnorm_backward_sums(s, gx, gdy, gmean, gvar, ggrad, gdg, gdb);
      k.batchnorm_backward_with_sums(s, gx, gdy, gg, gmean, gvar, ggrad_summed, gdx);
    });
    std::vector<double> first(sums_count);
    cpu.batchnorm_sums(s, x.data(), first.data());
    EXPECT_TRUE(all_close(download(gsums, sums_count), first, 1e-12, 1e-9)) << "the sums are double";
    EXPECT_TRUE(close_to_cpu(download(gy, count), y, 1e-5, 1e-5));
    EXPECT_TRUE(close_to_cpu(download(gmean, c), mean, 1e-6, 1e-6));
    EXPECT_TRUE(close_to_cpu(download(gvar, c), var, 1e-6, 1e-6));
    EXPECT_TRUE(close_to_cpu(download(grm, c), rm, 1e-6, 1e-6));
    EXPECT_TRUE(close_to_cpu(download(grv, c), rv, 1e-6, 1e-6));
    EXPECT_TRUE(close_to_cpu(download(gdg, c), dgamma, 1e-5, 1e-5)) << "the first half's own";
    EXPECT_TRUE(close_to_cpu(download(gdb, c), dbeta, 1e-5, 1e-5));
    EXPECT_TRUE(close_to_cpu(download(gdx, count), dx, 1e-4, 1e-5));
  }
}

TEST_F(GpuBatchNorm, ASingleValuePerChannelIsRefusedInTraining) {
  const BatchNormShape s{1, 4, 1, 1};
  float* x = nan_buffer(4);
  EXPECT_THROW(
      run([&](Kernels& k) { k.batchnorm_forward_train(s, x, x, x, x, x, x, nullptr, nullptr, nullptr); }),
      std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
