// The cpu device's own bf16 kernels (CpuKernels::takes_16bit: oneDNN's
// bf16 primitives on AVX-512 BF16): convolution, batch norm (its fused
// ReLU too), pooling, ReLU and the residual add against the f32 kernels on
// the same bf16 values, in NCHW and in the channel-blocked layout training
// keeps activations in. Where the processor (or a caller's
// ONEDNN_MAX_CPU_ISA) gives no native bf16, every test skips; ctest's
// `cpu_native_bf16` runs them uncapped even when the suite is capped.
//
// Tolerances, as for the cuda device's 16-bit kernels: the operands are
// bf16 values, so products are exact in f32 on both sides; what differs
// is the order of the sums and the one rounding of each result (2^-8
// relative). Results get 2^-7 relative plus 2e-2 absolute, weight
// gradients (summed over n*oh*ow in f32, never rounded) 4e-2 absolute.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::conv_shape;
using testing::random_floats;

constexpr double kRtol = 1.0 / 128, kAtol = 2e-2, kGradAtol = 4e-2;

ConvShape grouped(ConvShape s, std::int64_t groups) {  // groups == c == k: depthwise
  s.groups = groups;
  return s;
}
constexpr std::uint16_t kNan16 = 0x7fc0;

class CpuBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!k.takes_16bit(DType::bf16))
      GTEST_SKIP() << "no bf16 kernels of the cpu device's own here (no AVX-512 BF16, or ONEDNN_MAX_CPU_ISA caps it)";
  }

  // `values` rounded to bf16, and those bf16 values widened back to f32.
  std::vector<std::uint16_t> rounded(const std::vector<float>& values, std::vector<float>& widened) {
    std::vector<std::uint16_t> bits(values.size());
    k.convert(static_cast<std::int64_t>(values.size()), DType::f32, values.data(), DType::bf16, bits.data(), 1.0f);
    widened = widen(bits);
    return bits;
  }
  std::vector<float> widen(const std::vector<std::uint16_t>& bits) {
    std::vector<float> out(bits.size());
    k.convert(static_cast<std::int64_t>(bits.size()), DType::bf16, bits.data(), DType::f32, out.data(), 1.0f);
    return out;
  }
  ::testing::AssertionResult close(const std::vector<float>& actual, const std::vector<float>& expected,
                                   double atol = kAtol) {
    return testing::all_close(actual, testing::to_double(expected), kRtol, atol);
  }

  CpuKernels k;
};

TEST_F(CpuBf16, ConvolutionMatchesF32OnTheSameValues) {
  for (std::int64_t block : {std::int64_t{0}, k.channel_block()})
    for (ConvScheme scheme : testing::kBothSchemes)
      for (ConvShape s : {conv_shape(4, 16, 12, 12, 32, 3, 3, 1, 1), conv_shape(4, 32, 8, 8, 32, 1, 1, 2, 0),
                          grouped(conv_shape(4, 32, 8, 8, 32, 3, 3, 1, 1), 32),
                          grouped(conv_shape(4, 32, 8, 8, 64, 3, 3, 2, 1), 2)}) {
        SCOPED_TRACE("block " + std::to_string(block) + " scheme " + testing::scheme_name(scheme) + " c " +
                     std::to_string(s.c) + " k " + std::to_string(s.k) + " groups " + std::to_string(s.groups));
        s.bias = true;
        s.channel_block = block;
        const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
        const auto ny = static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w());
        std::vector<float> x, dy, w16_values;
        const std::vector<std::uint16_t> x16 = rounded(random_floats(nx, 1), x);
        const std::vector<std::uint16_t> dy16 = rounded(random_floats(ny, 4), dy);
        const std::vector<float> w = random_floats(static_cast<std::size_t>(s.weight_numel()), 2);
        rounded(w, w16_values);  // the bf16 kernels read the weights' bf16 copy
        const std::vector<float> b = random_floats(static_cast<std::size_t>(s.k), 3);
        auto run = [&](const ConvShape& shape, const void* xs, const void* dys, const float* ws, void* y, void* dx,
                       float* dw, float* db) {
          for (ConvPass pass : testing::kAllPasses) {
            std::vector<std::byte> space(k.conv_workspace_bytes(shape, scheme, pass));
            if (pass == ConvPass::forward) k.conv_forward(shape, scheme, xs, ws, b.data(), y, space.data());
            if (pass == ConvPass::backward_data) k.conv_backward_data(shape, scheme, dys, ws, dx, space.data());
            if (pass == ConvPass::backward_weights)
              k.conv_backward_weights(shape, scheme, xs, dys, dw, db, space.data());
          }
        };
        std::vector<float> y(ny), dx(nx), dw(w.size()), db(b.size());
        run(s, x.data(), dy.data(), w16_values.data(), y.data(), dx.data(), dw.data(), db.data());

        ConvShape h = s;
        h.dtype = DType::bf16;
        std::vector<std::uint16_t> y16(ny, kNan16), dx16(nx, kNan16);
        std::vector<float> dw16 = testing::nan_filled(w.size()), db16 = testing::nan_filled(b.size());
        run(h, x16.data(), dy16.data(), w.data(), y16.data(), dx16.data(), dw16.data(), db16.data());
        EXPECT_TRUE(close(widen(y16), y)) << "y";
        EXPECT_TRUE(close(widen(dx16), dx)) << "dx";
        EXPECT_TRUE(close(dw16, dw, kGradAtol)) << "dw, in f32";
        EXPECT_TRUE(testing::all_close(db16, testing::to_double(db), 1e-4, 1e-3)) << "db, summed in f32";
      }
}

TEST_F(CpuBf16, BatchNormAndItsFusedReluMatchF32OnTheSameValues) {
  for (std::int64_t block : {std::int64_t{0}, k.channel_block()})
    for (bool relu : {false, true}) {
      SCOPED_TRACE("block " + std::to_string(block) + (relu ? " relu" : ""));
      BatchNormShape s{8, 32, 6, 6};
      s.channel_block = block;
      s.relu = relu;
      const auto count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
      const auto c = static_cast<std::size_t>(s.c);
      std::vector<float> x, dy;
      const std::vector<std::uint16_t> x16 = rounded(random_floats(count, 11, -2.0f, 5.0f), x);
      const std::vector<std::uint16_t> dy16 = rounded(random_floats(count, 16), dy);
      const std::vector<float> gamma = random_floats(c, 12, 0.5f, 1.5f), beta = random_floats(c, 13);
      const std::vector<float> rm0 = random_floats(c, 14), rv0 = random_floats(c, 15, 0.5f, 2.0f);

      std::vector<float> rm = rm0, rv = rv0, y(count), mean(c), var(c), dx(count), dgamma(c), dbeta(c);
      std::vector<std::byte> mask(k.batchnorm_relu_mask_bytes(s));
      k.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(), rm.data(),
                                rv.data(), relu ? mask.data() : nullptr);
      k.batchnorm_backward(s, x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(), dgamma.data(),
                           dbeta.data(), relu ? mask.data() : nullptr);

      BatchNormShape h = s;
      h.dtype = DType::bf16;
      EXPECT_EQ(k.batchnorm_relu_mask_bytes(h), mask.size()) << "plans size the mask from the f32 shape";
      std::vector<float> hrm = rm0, hrv = rv0, hmean(c), hvar(c), hdgamma(c), hdbeta(c);
      std::vector<std::uint16_t> y16(count, kNan16), dx16(count, kNan16);
      std::vector<std::byte> hmask(mask.size());
      k.batchnorm_forward_train(h, x16.data(), gamma.data(), beta.data(), y16.data(), hmean.data(), hvar.data(),
                                hrm.data(), hrv.data(), relu ? hmask.data() : nullptr);
      k.batchnorm_backward(h, x16.data(), dy16.data(), gamma.data(), hmean.data(), hvar.data(), dx16.data(),
                           hdgamma.data(), hdbeta.data(), relu ? hmask.data() : nullptr);
      EXPECT_TRUE(testing::all_close(hmean, testing::to_double(mean), 1e-4, 1e-5)) << "statistics in f32";
      EXPECT_TRUE(testing::all_close(hvar, testing::to_double(var), 1e-4, 1e-5));
      EXPECT_TRUE(testing::all_close(hrv, testing::to_double(rv), 1e-4, 1e-5));
      EXPECT_TRUE(close(widen(y16), y)) << "y";
      EXPECT_TRUE(close(widen(dx16), dx)) << "dx";
      EXPECT_TRUE(testing::all_close(hdgamma, testing::to_double(dgamma), 1e-3, 1e-2));
      EXPECT_TRUE(testing::all_close(hdbeta, testing::to_double(dbeta), 1e-3, 1e-2));

      std::vector<float> yi(count);
      std::vector<std::uint16_t> yi16(count, kNan16);
      k.batchnorm_forward_infer(s, x.data(), gamma.data(), beta.data(), rm0.data(), rv0.data(), yi.data());
      k.batchnorm_forward_infer(h, x16.data(), gamma.data(), beta.data(), rm0.data(), rv0.data(), yi16.data());
      EXPECT_TRUE(close(widen(yi16), yi)) << "evaluation's y";
    }
}

// Max pooling picks one of its inputs: exact. Average pooling and the
// backward passes sum in f32 and round once.
TEST_F(CpuBf16, PoolingMatchesF32OnTheSameValues) {
  for (std::int64_t block : {std::int64_t{0}, k.channel_block()})
    for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
      SCOPED_TRACE("block " + std::to_string(block) + (kind == PoolKind::max ? " max" : " avg"));
      PoolShape s = testing::pool_shape(kind, 4, 16, 12, 12, 3, 2, 1);
      s.channel_block = block;
      const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
      const auto ny = static_cast<std::size_t>(s.n * s.c * s.out_h() * s.out_w());
      const std::vector<std::uint16_t> x16 = testing::distinct_16bit(nx, 0x3000);
      const std::vector<float> x = widen(x16);
      std::vector<float> dy;
      const std::vector<std::uint16_t> dy16 = rounded(random_floats(ny, 42), dy);
      const testing::PoolPasses f32 = testing::f32_pool_passes(k, s, x, dy);
      const std::vector<float>&y = f32.y, &dx = f32.dx;

      PoolShape h = s;
      h.dtype = DType::bf16;
      EXPECT_EQ(k.pool_saved_bytes(h), f32.saved_bytes);
      std::vector<std::uint16_t> y16(ny, kNan16), dx16(nx, kNan16);
      std::vector<std::byte> hsaved(f32.saved_bytes);
      k.pool_forward(h, x16.data(), y16.data(), hsaved.empty() ? nullptr : hsaved.data());
      k.pool_backward(h, x16.data(), dy16.data(), hsaved.empty() ? nullptr : hsaved.data(), dx16.data());
      if (kind == PoolKind::max)
        EXPECT_TRUE(testing::all_close(widen(y16), testing::to_double(y), 0, 0)) << "a maximum is one of the inputs";
      else
        EXPECT_TRUE(close(widen(y16), y)) << "avg y";
      EXPECT_TRUE(close(widen(dx16), dx)) << "dx";
    }
}

// The add sums in f32 and rounds once: f32's sum, rounded. ReLU and its
// backward pick values: exact.
TEST_F(CpuBf16, AddReluAndTheirBackwardAreF32sRounded) {
  constexpr std::size_t kCount = 100003;
  std::vector<float> a, b, dy;
  std::vector<std::uint16_t> a16 = rounded(random_floats(kCount, 51), a), b16 = rounded(random_floats(kCount, 52), b);
  const std::vector<std::uint16_t> dy16 = rounded(random_floats(kCount, 53), dy);
  a16[7] = kNan16;  // a NaN stays NaN through the fused add's ReLU
  a[7] = std::numeric_limits<float>::quiet_NaN();
  for (bool relu : {false, true}) {
    std::vector<float> sum(kCount), expected;
    if (relu)
      k.add_relu_forward(kCount, DType::f32, a.data(), b.data(), sum.data());
    else
      k.add_forward(kCount, DType::f32, a.data(), b.data(), sum.data());
    const std::vector<std::uint16_t> want = rounded(sum, expected);
    std::vector<std::uint16_t> y16(kCount, 0);
    if (relu)
      k.add_relu_forward(kCount, DType::bf16, a16.data(), b16.data(), y16.data());
    else
      k.add_forward(kCount, DType::bf16, a16.data(), b16.data(), y16.data());
    EXPECT_EQ(y16, want) << (relu ? "add_relu" : "add");
  }
  std::vector<std::uint16_t> r16(kCount, kNan16), dr16(kCount, kNan16);
  k.relu_forward(kCount, DType::bf16, b16.data(), r16.data());
  k.relu_backward(kCount, DType::bf16, r16.data(), dy16.data(), dr16.data());
  const std::vector<float> r = widen(r16), dr = widen(dr16);
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(r[i], b[i] > 0 ? b[i] : 0.0f) << i;
    ASSERT_EQ(dr[i], b[i] > 0 ? dy[i] : 0.0f) << i;
  }
}

}  // namespace
}  // namespace tidepool
