// The cpu device's 16-bit conversions: round to nearest even, ties to the
// even neighbour, f16 overflow to infinity, NaN kept, the scale applied
// before rounding; and 16-bit accumulation rounds its f32 sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"

namespace tidepool {
namespace {

std::vector<float> round_trip(CpuKernels& k, DType t, const std::vector<float>& x, float scale = 1.0f) {
  std::vector<std::uint16_t> h(x.size());
  std::vector<float> back(x.size());
  const auto n = static_cast<std::int64_t>(x.size());
  k.convert(n, DType::f32, x.data(), t, h.data(), scale);
  k.convert(n, t, h.data(), DType::f32, back.data(), 1.0f);
  return back;
}

// f32 to f32 scales (data-parallel averaging: a bucket's sum times
// 1/ranks), one rounding per value, across the threads' split as well.
TEST(Convert, F32ToF32MultipliesEachValueByTheScaleOnce) {
  CpuKernels k;
  std::vector<float> x(1 << 20), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000) * 0.1f - 7.3f;
  x[5] = std::numeric_limits<float>::quiet_NaN();
  k.convert(static_cast<std::int64_t>(x.size()), DType::f32, x.data(), DType::f32, y.data(), 1.0f / 3.0f);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (i != 5) ASSERT_EQ(y[i], x[i] * (1.0f / 3.0f)) << i;
  EXPECT_TRUE(std::isnan(y[5]));
}

TEST(Convert, Bf16RoundsToNearestEvenAndKeepsNaN) {
  CpuKernels k;
  const float ulp = std::ldexp(1.0f, -7);  // bf16's unit at 1: 8 significant bits
  // 17 values so that the vectorised body and the tail both run.
  std::vector<float> x(17, 3.0f);
  x[0] = 1.0f + ulp / 2;                       // a tie: to the even neighbour, 1
  x[1] = 1.0f + ulp / 2 + std::ldexp(1.0f, -20);  // just past it: up
  x[2] = 1.0f + ulp + ulp / 2;                 // a tie between odd 1+ulp and even 1+2ulp: up
  x[3] = -1.0f - ulp / 4;                      // down in magnitude
  x[4] = std::numeric_limits<float>::quiet_NaN();
  x[5] = std::numeric_limits<float>::infinity();
  x[6] = 3.0e38f;                              // near bf16's largest (3.39e38), still finite
  const std::vector<float> y = round_trip(k, DType::bf16, x);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f + ulp);
  EXPECT_EQ(y[2], 1.0f + 2 * ulp);
  EXPECT_EQ(y[3], -1.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], std::numeric_limits<float>::infinity());
  EXPECT_NEAR(y[6], 3.0e38f, 3.0e38f * ulp);
  EXPECT_EQ(y[16], 3.0f);
}

TEST(Convert, F16RoundsOverflowsToInfinityAndKeepsSubnormals) {
  CpuKernels k;
  std::vector<float> x(19, 0.5f);
  x[0] = 65504.0f;                    // f16's largest
  x[1] = 65519.0f;                    // below the midpoint to the next binade: 65504
  x[2] = 65520.0f;                    // the midpoint: infinity
  x[3] = -1.0e6f;                     // -infinity
  x[4] = std::ldexp(1.0f, -24);       // the smallest subnormal
  x[5] = std::ldexp(1.0f, -26);       // below half of it: zero
  x[6] = 1.0f + std::ldexp(1.0f, -11);  // a tie at 1: to 1
  x[7] = std::numeric_limits<float>::quiet_NaN();
  x[18] = 0.1f;                         // in the tail after the 8-wide body
  const std::vector<float> y = round_trip(k, DType::f16, x);
  EXPECT_EQ(y[0], 65504.0f);
  EXPECT_EQ(y[1], 65504.0f);
  EXPECT_EQ(y[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[3], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[4], std::ldexp(1.0f, -24));
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[6], 1.0f);
  EXPECT_TRUE(std::isnan(y[7]));
  EXPECT_EQ(y[8], 0.5f);
  EXPECT_NEAR(y[18], 0.1f, 0.1f * std::ldexp(1.0f, -11));
}

TEST(Convert, ScalesBeforeRounding) {
  CpuKernels k;
  // 2^-30 is below f16's range; scaled by 2^16 it is 2^-14, exact.
  const std::vector<float> x(9, std::ldexp(1.0f, -30));
  for (float v : round_trip(k, DType::f16, x, 65536.0f)) EXPECT_EQ(v, std::ldexp(1.0f, -14));
  for (float v : round_trip(k, DType::f16, x)) EXPECT_EQ(v, 0.0f) << "unscaled, it underflows";
  // 40000 * 2 overflows f16.
  for (float v : round_trip(k, DType::f16, std::vector<float>(9, 40000.0f), 2.0f))
    EXPECT_EQ(v, std::numeric_limits<float>::infinity());
}

TEST(Convert, Accumulate16BitRoundsItsSumToNearestEven) {
  CpuKernels k;
  for (DType t : {DType::bf16, DType::f16}) {
    const float ulp = std::ldexp(1.0f, t == DType::bf16 ? -7 : -10);
    // The sums are exact in f32 and fall on ties in 16 bits: (1 + ulp) +
    // ulp/2 goes up to the even 1 + 2 ulp, 1 + ulp/2 down to the even 1.
    std::vector<float> a = {1.0f + ulp, 1.0f, 2.0f}, b = {ulp / 2, ulp / 2, 1.0f};
    std::vector<std::uint16_t> ha(3), hb(3);
    k.convert(3, DType::f32, a.data(), t, ha.data(), 1.0f);
    k.convert(3, DType::f32, b.data(), t, hb.data(), 1.0f);
    k.accumulate_16bit(3, t, hb.data(), ha.data());
    std::vector<float> sum(3);
    k.convert(3, t, ha.data(), DType::f32, sum.data(), 1.0f);
    EXPECT_EQ(sum[0], 1.0f + 2 * ulp) << to_string(t);
    EXPECT_EQ(sum[1], 1.0f) << to_string(t);
    EXPECT_EQ(sum[2], 3.0f) << to_string(t);
  }
  std::vector<float> f(1);
  EXPECT_THROW(k.accumulate_16bit(1, DType::f32, f.data(), f.data()), std::invalid_argument);
  EXPECT_THROW(k.convert(1, DType::i32, f.data(), DType::f32, f.data(), 1.0f), std::invalid_argument);
}

// The vectorised, thread-split bf16 loops give exactly the bits of the
// element-by-element definition (top half of the f32, rounded to nearest
// even by integer arithmetic, NaN quieted), for every bit pattern kind:
// a long run of random f32 bit patterns (NaNs, infinities, subnormals and
// ties among them) and every one of the 65536 bf16 values.
TEST(Convert, LongBf16RunsMatchTheElementwiseDefinition) {
  CpuKernels k;
  const std::size_t n = (std::size_t{1} << 18) + 5;
  std::vector<std::uint32_t> bits(n);
  std::uint64_t state = 12345;
  for (std::size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    bits[i] = static_cast<std::uint32_t>(state >> 32);
    if (i % 7 == 0) bits[i] = (bits[i] & 0xffff0000u) | 0x8000u;  // an exact tie
  }
  bits[1] = 0x7f800000u, bits[2] = 0xff800000u, bits[3] = 0x7fc00001u, bits[4] = 0xffffffffu;
  std::vector<float> x(n);
  std::memcpy(x.data(), bits.data(), n * sizeof(float));
  std::vector<std::uint16_t> h(n);
  k.convert(static_cast<std::int64_t>(n), DType::f32, x.data(), DType::bf16, h.data(), 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = bits[i];
    const std::uint16_t want = (u & 0x7fffffffu) > 0x7f800000u
                                   ? static_cast<std::uint16_t>((u >> 16) | 0x40u)
                                   : static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    ASSERT_EQ(h[i], want) << "element " << i << " bits 0x" << std::hex << u;
  }

  std::vector<std::uint16_t> every(std::size_t{1} << 16);
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<std::uint16_t>(i);
  std::vector<float> wide(every.size());
  k.convert(static_cast<std::int64_t>(every.size()), DType::bf16, every.data(), DType::f32, wide.data(), 1.0f);
  for (std::size_t i = 0; i < every.size(); ++i) {
    std::uint32_t got;
    std::memcpy(&got, &wide[i], sizeof got);
    const std::uint32_t want = static_cast<std::uint32_t>(every[i]) << 16;
    // x * 1.0f quiets a signalling NaN; the element-by-element loop does the same.
    if (std::isnan(wide[i])) {
      ASSERT_EQ(got | 0x00400000u, want | 0x00400000u) << i;
    } else {
      ASSERT_EQ(got, want) << i;
    }
  }
}

// The vectorised, thread-split bf16 accumulation gives the bits of the
// element-by-element definition (widen both, add in f32, round once) on
// long runs of random values; a copy within a type (a residual's gradient
// handed to its second input) gives the bytes as they are.
TEST(Convert, LongBf16AccumulationsMatchTheElementwiseDefinitionAndCopiesKeepTheBytes) {
  CpuKernels k;
  const std::size_t n = (std::size_t{1} << 18) + 5;
  std::vector<std::uint16_t> acc(n), x(n);
  std::uint64_t state = 777;
  for (std::size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    acc[i] = static_cast<std::uint16_t>(state >> 48);
    x[i] = static_cast<std::uint16_t>(state >> 32);
  }
  std::vector<std::uint16_t> got = acc;
  k.accumulate_16bit(static_cast<std::int64_t>(n), DType::bf16, x.data(), got.data());
  auto widen = [](std::uint16_t h) {
    const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const float sum = widen(acc[i]) + widen(x[i]);
    std::uint32_t u;
    std::memcpy(&u, &sum, sizeof u);
    const std::uint16_t want = (u & 0x7fffffffu) > 0x7f800000u
                                   ? static_cast<std::uint16_t>((u >> 16) | 0x40u)
                                   : static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    ASSERT_EQ(got[i], want) << "element " << i;
  }
  for (DType t : {DType::bf16, DType::f16}) {
    std::vector<std::uint16_t> copy(n, 0);
    k.convert(static_cast<std::int64_t>(n), t, x.data(), t, copy.data(), 1.0f);
    EXPECT_EQ(copy, x) << to_string(t);
  }
}

}  // namespace
}  // namespace tidepool
