// fp16's loss-scaling kernels on the cpu device: unscaling is an exact
// division by a power of two, the overflow flag gathers a NaN or an
// infinity from any call and is never reset by one, and an update with the
// flag set leaves the weights and momenta as they were.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"

namespace tidepool {
namespace {

using testing::random_floats;

TEST(LossScalingKernels, UnscaleDividesExactlyAndFlagsOnlyNonFiniteValues) {
  CpuKernels k;
  std::vector<float> g = random_floats(1000, 5);
  std::vector<float> scaled = g;
  for (float& x : scaled) x *= 1024.0f;
  float flag = 7.0f;
  k.fill(1, 0.0f, &flag);
  EXPECT_EQ(flag, 0.0f);
  k.unscale_check(static_cast<std::int64_t>(scaled.size()), scaled.data(), 1.0f / 1024.0f, &flag);
  EXPECT_EQ(flag, 0.0f) << "finite gradients raise no flag";
  EXPECT_EQ(scaled, g) << "scaling by a power of two and back is exact";

  std::vector<float> inf = {1.0f, std::numeric_limits<float>::infinity(), 2.0f};
  k.unscale_check(3, inf.data(), 0.5f, &flag);
  EXPECT_EQ(flag, 1.0f);
  std::vector<float> fine = {1.0f, 2.0f};
  k.unscale_check(2, fine.data(), 0.5f, &flag);
  EXPECT_EQ(flag, 1.0f) << "a later finite gradient does not clear the flag";

  float nan_flag = 0.0f;
  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  k.unscale_check(1, nan.data(), 1.0f, &nan_flag);
  EXPECT_EQ(nan_flag, 1.0f);
  std::vector<float> huge = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  float huge_flag = 0.0f;
  k.unscale_check(2, huge.data(), 1.0f, &huge_flag);
  EXPECT_EQ(huge_flag, 0.0f) << "the largest finite values are not overflows";
}

TEST(LossScalingKernels, ASkippedUpdateLeavesWeightsAndMomentaAlone) {
  CpuKernels k;
  const std::vector<float> w0 = random_floats(64, 6), v0 = random_floats(64, 7), dw = random_floats(64, 8);
  std::vector<float> w = w0, v = v0;
  const float skip = 1.0f, go = 0.0f;
  k.sgd_update(64, 0.1f, 0.9f, 5e-4f, w.data(), dw.data(), v.data(), &skip);
  EXPECT_EQ(w, w0);
  EXPECT_EQ(v, v0);
  std::vector<float> w_null = w0, v_null = v0;
  k.sgd_update(64, 0.1f, 0.9f, 5e-4f, w.data(), dw.data(), v.data(), &go);
  k.sgd_update(64, 0.1f, 0.9f, 5e-4f, w_null.data(), dw.data(), v_null.data(), nullptr);
  EXPECT_NE(w, w0);
  EXPECT_EQ(w, w_null) << "a clear flag is no flag";
  EXPECT_EQ(v, v_null);
}

}  // namespace
}  // namespace tidepool
