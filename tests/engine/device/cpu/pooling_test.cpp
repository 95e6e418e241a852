// oneDNN max and average pooling against the reference, forward and
// backward, with the saved arg-max buffer sized by pool_saved_bytes.
#include "reference/pooling.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::distinct_floats;
using testing::nan_filled;
using testing::pool_shape;
using testing::PoolCase;
using testing::random_floats;
using testing::to_double;

std::vector<PoolCase> cases() {
  std::vector<PoolCase> out;
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    const std::string k = kind == PoolKind::max ? "max_" : "avg_";
    out.push_back({k + "2x2_stride2", pool_shape(kind, 2, 3, 8, 8, 2, 2, 0)});
    out.push_back({k + "3x3_stride2_pad1", pool_shape(kind, 2, 4, 9, 9, 3, 2, 1)});
    // 7 rows, 2x2 stride 2: the last row is never read.
    out.push_back({k + "2x2_stride2_odd", pool_shape(kind, 1, 2, 7, 7, 2, 2, 0)});
    out.push_back({k + "3x3_stride1_pad1", pool_shape(kind, 2, 3, 6, 5, 3, 1, 1)});
    // Global pooling (ResNet's head): one window covers the whole plane.
    out.push_back({k + "global", pool_shape(kind, 4, 16, 4, 4, 4, 1, 0)});
  }
  return out;
}

std::size_t in_count(const PoolShape& s) { return static_cast<std::size_t>(s.n * s.c * s.h * s.w); }
std::size_t out_count(const PoolShape& s) {
  return static_cast<std::size_t>(s.n * s.c * s.out_h() * s.out_w());
}

TEST(PoolKernel, SavedBytes) {
  CpuKernels k;
  for (const PoolCase& c : cases()) {
    const std::size_t bytes = k.pool_saved_bytes(c.shape);
    if (c.shape.kind == PoolKind::avg) {
      EXPECT_EQ(bytes, 0u) << c.name;
    } else {
      EXPECT_GE(bytes, out_count(c.shape)) << c.name << ": one arg-max per output at least";
    }
    EXPECT_EQ(bytes, CpuKernels().pool_saved_bytes(c.shape)) << c.name;
  }
}

TEST(PoolKernel, MatchesReferenceForward) {
  CpuKernels k;
  for (const PoolCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const PoolShape& s = c.shape;
    const auto x = distinct_floats(in_count(s), 31);
    std::vector<float> y = nan_filled(out_count(s));
    std::vector<std::byte> saved(k.pool_saved_bytes(s));
    k.pool_forward(s, x.data(), y.data(), saved.empty() ? nullptr : saved.data());
    std::vector<double> y_ref(y.size());
    const auto xd = to_double(x);
    reference::pool_forward(s, xd.data(), y_ref.data());
    EXPECT_TRUE(all_close(y, y_ref, 1e-6, 1e-6));

    // Without a saved buffer (evaluation) the output is the same.
    std::vector<float> y_eval = nan_filled(y.size());
    k.pool_forward(s, x.data(), y_eval.data(), nullptr);
    EXPECT_EQ(y_eval, y);
  }
}

TEST(PoolKernel, MatchesReferenceBackward) {
  CpuKernels k;
  for (const PoolCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const PoolShape& s = c.shape;
    const auto x = distinct_floats(in_count(s), 32);
    const auto dy = random_floats(out_count(s), 33);
    std::vector<float> y(out_count(s));
    std::vector<std::byte> saved(k.pool_saved_bytes(s));
    void* saved_ptr = saved.empty() ? nullptr : saved.data();
    k.pool_forward(s, x.data(), y.data(), saved_ptr);
    std::vector<float> dx = nan_filled(in_count(s));
    k.pool_backward(s, x.data(), dy.data(), saved_ptr, dx.data());
    std::vector<double> dx_ref(dx.size());
    const auto xd = to_double(x), dyd = to_double(dy);
    reference::pool_backward(s, xd.data(), dyd.data(), dx_ref.data());
    EXPECT_TRUE(all_close(dx, dx_ref, 1e-5, 1e-6));
  }
}

TEST(PoolKernel, MaxBackwardWithoutSavedThrows) {
  CpuKernels k;
  const PoolShape s = pool_shape(PoolKind::max, 1, 1, 4, 4, 2, 2);
  std::vector<float> dy(4), dx(16), x(16);
  EXPECT_THROW(k.pool_backward(s, x.data(), dy.data(), nullptr, dx.data()), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
