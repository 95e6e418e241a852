// Dropout's counter-based mask: it must match the reference recipe bit for
// bit (the cuda table draws the same mask), depend only on (seed, index),
// keep about 1 - p of the elements, and scale the kept ones by 1 / (1 - p).
#include "reference/dropout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::nan_filled;
using testing::random_floats;
using testing::to_double;

struct Dropped {
  std::vector<float> y, mask;
};

Dropped forward(CpuKernels& k, const std::vector<float>& x, float p, std::uint64_t seed) {
  Dropped r{nan_filled(x.size()), nan_filled(x.size())};
  k.dropout_forward(static_cast<std::int64_t>(x.size()), p, seed, x.data(), r.y.data(),
                    r.mask.data());
  return r;
}

double kept_fraction(const std::vector<float>& mask) {
  std::size_t kept = 0;
  for (float m : mask) kept += m != 0.0f ? 1 : 0;
  return static_cast<double>(kept) / static_cast<double>(mask.size());
}

TEST(DropoutKernel, MatchesReference) {
  CpuKernels k;
  const auto x = random_floats(5000, 51);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    for (std::uint64_t seed : {0ull, 42ull, 0xDEADBEEFCAFEF00Dull}) {
      SCOPED_TRACE("p " + std::to_string(p) + " seed " + std::to_string(seed));
      const Dropped r = forward(k, x, p, seed);
      std::vector<double> y_ref(x.size()), mask_ref(x.size());
      const auto xd = to_double(x);
      reference::dropout_forward(static_cast<std::int64_t>(x.size()), p, seed, xd.data(),
                                 y_ref.data(), mask_ref.data());
      EXPECT_TRUE(all_close(r.mask, mask_ref, 1e-7, 0.0));
      EXPECT_TRUE(all_close(r.y, y_ref, 1e-6, 0.0));
    }
  }
}

TEST(DropoutKernel, SameSeedSameMask) {
  CpuKernels k;
  const auto x = random_floats(10000, 52);
  const Dropped a = forward(k, x, 0.5f, 1234);
  const Dropped b = forward(k, x, 0.5f, 1234);
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_EQ(a.y, b.y);
  // A fresh table (another device, another thread count) draws it too.
  CpuKernels other;
  EXPECT_EQ(forward(other, x, 0.5f, 1234).mask, a.mask);
}

TEST(DropoutKernel, DifferentSeedDifferentMask) {
  CpuKernels k;
  const auto x = random_floats(10000, 53);
  const Dropped a = forward(k, x, 0.5f, 1234);
  const Dropped b = forward(k, x, 0.5f, 1235);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += a.mask[i] != b.mask[i] ? 1 : 0;
  // Two independent p = 0.5 masks disagree on about half the elements.
  EXPECT_NEAR(static_cast<double>(differ) / static_cast<double>(x.size()), 0.5, 0.03);
}

TEST(DropoutKernel, MaskDependsOnIndexNotLength) {
  CpuKernels k;
  const auto x = random_floats(1000, 54);
  const std::vector<float> prefix(x.begin(), x.begin() + 100);
  const Dropped whole = forward(k, x, 0.3f, 99);
  const Dropped part = forward(k, prefix, 0.3f, 99);
  EXPECT_EQ(part.mask, std::vector<float>(whole.mask.begin(), whole.mask.begin() + 100));
}

TEST(DropoutKernel, KeepFractionCloseToOneMinusP) {
  CpuKernels k;
  const auto x = random_floats(200000, 55);
  for (float p : {0.1f, 0.25f, 0.5f, 0.8f}) {
    const Dropped r = forward(k, x, p, 7);
    // Binomial standard deviation is at most 0.0011 here; 0.01 is ~9 sigma.
    EXPECT_NEAR(kept_fraction(r.mask), 1.0 - p, 0.01) << "p " << p;
    const float scale = 1.0f / (1.0f - p);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(r.mask[i] == 0.0f || r.mask[i] == scale) << "mask[" << i << "] = " << r.mask[i];
      ASSERT_EQ(r.y[i], x[i] * r.mask[i]);
    }
  }
}

TEST(DropoutKernel, EdgeProbabilities) {
  CpuKernels k;
  const auto x = random_floats(1000, 56);
  const Dropped none = forward(k, x, 0.0f, 3);
  EXPECT_EQ(none.mask, std::vector<float>(x.size(), 1.0f));
  EXPECT_EQ(none.y, x);
  const Dropped all = forward(k, x, 1.0f, 3);
  EXPECT_EQ(all.mask, std::vector<float>(x.size(), 0.0f));
  EXPECT_EQ(all.y, std::vector<float>(x.size(), 0.0f));
  std::vector<float> y(x.size()), mask(x.size());
  EXPECT_THROW(k.dropout_forward(1000, 1.5f, 3, x.data(), y.data(), mask.data()),
               std::invalid_argument);
}

TEST(DropoutKernel, BackwardAppliesMask) {
  CpuKernels k;
  const auto x = random_floats(3000, 57);
  const auto dy = random_floats(3000, 58);
  const Dropped r = forward(k, x, 0.4f, 11);
  std::vector<float> dx = nan_filled(x.size());
  k.dropout_backward(static_cast<std::int64_t>(x.size()), r.mask.data(), dy.data(), dx.data());
  std::vector<double> dx_ref(x.size());
  const auto md = to_double(r.mask), dyd = to_double(dy);
  reference::dropout_backward(static_cast<std::int64_t>(x.size()), md.data(), dyd.data(),
                              dx_ref.data());
  EXPECT_TRUE(all_close(dx, dx_ref, 1e-7, 0.0));
}

}  // namespace
}  // namespace tidepool
