// Residual add, copy (flatten's kernel) and gradient accumulation against
// the reference, at lengths around the vector width and in place.
#include "reference/elementwise.h"

#include <gtest/gtest.h>

#include <cstdint>
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

const std::int64_t kCounts[] = {1, 7, 8, 9, 1000, 4097};

TEST(ElementwiseKernel, AddMatchesReference) {
  CpuKernels k;
  for (std::int64_t n : kCounts) {
    SCOPED_TRACE("count " + std::to_string(n));
    const auto a = random_floats(static_cast<std::size_t>(n), 61);
    const auto b = random_floats(a.size(), 62);
    std::vector<float> y = nan_filled(a.size());
    k.add_forward(n, DType::f32, a.data(), b.data(), y.data());
    std::vector<double> y_ref(a.size());
    const auto ad = to_double(a), bd = to_double(b);
    reference::add_forward(n, ad.data(), bd.data(), y_ref.data());
    // Float addition of two floats is correctly rounded: one ulp at most.
    EXPECT_TRUE(all_close(y, y_ref, 1.2e-7, 0.0));
  }
}

TEST(ElementwiseKernel, AddInPlace) {
  CpuKernels k;
  const auto a = random_floats(1000, 63);
  const auto b = random_floats(1000, 64);
  std::vector<float> expected(1000);
  k.add_forward(1000, DType::f32, a.data(), b.data(), expected.data());
  std::vector<float> inout = a;
  k.add_forward(1000, DType::f32, inout.data(), b.data(), inout.data());
  EXPECT_EQ(inout, expected);
}

TEST(ElementwiseKernel, CopyIsExact) {
  CpuKernels k;
  for (std::int64_t n : kCounts) {
    const auto x = random_floats(static_cast<std::size_t>(n), 65);
    std::vector<float> y = nan_filled(x.size());
    k.copy(n, x.data(), y.data());
    EXPECT_EQ(y, x) << "count " << n;
  }
  // In place (a flatten that reuses its input's buffer) leaves it as is.
  auto x = random_floats(100, 66);
  const auto before = x;
  k.copy(100, x.data(), x.data());
  EXPECT_EQ(x, before);
}

TEST(ElementwiseKernel, AccumulateMatchesReference) {
  CpuKernels k;
  for (std::int64_t n : kCounts) {
    SCOPED_TRACE("count " + std::to_string(n));
    const auto x = random_floats(static_cast<std::size_t>(n), 67);
    auto acc = random_floats(x.size(), 68);
    std::vector<double> acc_ref = to_double(acc);
    const auto xd = to_double(x);
    // Three fan-out branches adding into one gradient.
    for (int branch = 0; branch < 3; ++branch) {
      k.accumulate(n, x.data(), acc.data());
      reference::accumulate(n, xd.data(), acc_ref.data());
    }
    EXPECT_TRUE(all_close(acc, acc_ref, 1e-6, 1e-6));
  }
}

// Long runs split over the OpenMP threads (parallel_loops.h); each element
// is still computed alone, so the results are exactly the one-thread ones,
// including in place and for a copy between disjoint buffers.
TEST(ElementwiseKernel, LongRunsSplitOverThreadsAreExact) {
  CpuKernels k;
  const std::int64_t n = (std::int64_t{1} << 20) + 3;  // past the threshold, not a multiple of anything
  const auto a = random_floats(static_cast<std::size_t>(n), 71);
  const auto b = random_floats(a.size(), 72);
  std::vector<float> y = nan_filled(a.size());
  k.add_forward(n, DType::f32, a.data(), b.data(), y.data());
  std::vector<float> acc = a;
  k.accumulate(n, b.data(), acc.data());
  std::vector<float> copied = nan_filled(a.size());
  k.copy(n, a.data(), copied.data());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(y[i], a[i] + b[i]) << i;
    ASSERT_EQ(acc[i], a[i] + b[i]) << i;
    ASSERT_EQ(copied[i], a[i]) << i;
  }
  std::vector<float> w = a, v(a.size(), 0.5f);
  k.sgd_update(n, 0.1f, 0.9f, 5e-4f, w.data(), b.data(), v.data(), nullptr);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float grad = b[i] + 5e-4f * a[i];
    const float vel = 0.9f * 0.5f + grad;
    ASSERT_EQ(w[i], a[i] - 0.1f * vel) << i;
  }
}

}  // namespace
}  // namespace tidepool
