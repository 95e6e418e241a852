// SGD with momentum and weight decay against the reference over several
// steps, and the PyTorch convention that the first step from a zero
// velocity is a plain gradient step.
#include "reference/sgd.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::random_floats;
using testing::to_double;

TEST(SgdKernel, MatchesReferenceOverSteps) {
  CpuKernels k;
  const std::int64_t count = 1003;
  auto w = random_floats(static_cast<std::size_t>(count), 81);
  std::vector<float> v(w.size(), 0.0f);
  std::vector<double> w_ref = to_double(w), v_ref(w.size(), 0.0);
  const float lr = 0.05f, momentum = 0.9f, wd = 5e-4f;
  for (std::uint32_t step = 0; step < 5; ++step) {
    const auto dw = random_floats(w.size(), 82 + step);
    const auto dwd = to_double(dw);
    k.sgd_update(count, lr, momentum, wd, w.data(), dw.data(), v.data(), nullptr);
    reference::sgd_update(count, lr, momentum, wd, w_ref.data(), dwd.data(), v_ref.data());
  }
  EXPECT_TRUE(all_close(w, w_ref, 1e-5, 1e-6));
  EXPECT_TRUE(all_close(v, v_ref, 1e-5, 1e-6));
}

TEST(SgdKernel, FirstStepIsPlainGradientStep) {
  CpuKernels k;
  std::vector<float> w = {1.0f, -2.0f, 0.5f};
  const std::vector<float> dw = {0.1f, 0.2f, -0.3f};
  std::vector<float> v(3, 0.0f);
  k.sgd_update(3, 0.1f, 0.9f, 0.01f, w.data(), dw.data(), v.data(), nullptr);
  // g = dw + 0.01 w;  v = g;  w -= 0.1 g
  const float g0 = 0.1f + 0.01f * 1.0f, g1 = 0.2f + 0.01f * -2.0f, g2 = -0.3f + 0.01f * 0.5f;
  EXPECT_FLOAT_EQ(v[0], g0);
  EXPECT_FLOAT_EQ(v[1], g1);
  EXPECT_FLOAT_EQ(v[2], g2);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.1f * g0);
  EXPECT_FLOAT_EQ(w[1], -2.0f - 0.1f * g1);
  EXPECT_FLOAT_EQ(w[2], 0.5f - 0.1f * g2);
}

TEST(SgdKernel, MomentumAccumulates) {
  // Constant gradient 1, no decay: v goes 1, 1.9, 2.71 and w drops by lr*v.
  CpuKernels k;
  std::vector<float> w = {0.0f}, v = {0.0f};
  const std::vector<float> dw = {1.0f};
  float expected_w = 0.0f;
  for (float expected_v : {1.0f, 1.9f, 2.71f}) {
    k.sgd_update(1, 0.5f, 0.9f, 0.0f, w.data(), dw.data(), v.data(), nullptr);
    expected_w -= 0.5f * expected_v;
    EXPECT_NEAR(v[0], expected_v, 1e-6f);
    EXPECT_NEAR(w[0], expected_w, 1e-6f);
  }
}

}  // namespace
}  // namespace tidepool
