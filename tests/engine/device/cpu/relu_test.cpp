// oneDNN ReLU against the reference, forward and backward (which reads the
// forward output), including lengths that are not a multiple of the vector
// width and in-place use.
#include "reference/relu.h"

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

const std::int64_t kCounts[] = {1, 7, 8, 1000, 4099};

TEST(ReluKernel, MatchesReferenceForward) {
  CpuKernels k;
  for (std::int64_t count : kCounts) {
    SCOPED_TRACE("count " + std::to_string(count));
    const auto x = random_floats(static_cast<std::size_t>(count), 21);
    std::vector<float> y = nan_filled(x.size());
    k.relu_forward(count, DType::f32, x.data(), y.data());
    std::vector<double> y_ref(x.size());
    const auto xd = to_double(x);
    reference::relu_forward(count, xd.data(), y_ref.data());
    EXPECT_TRUE(all_close(y, y_ref, 0.0, 0.0));
  }
}

TEST(ReluKernel, MatchesReferenceBackward) {
  CpuKernels k;
  for (std::int64_t count : kCounts) {
    SCOPED_TRACE("count " + std::to_string(count));
    const auto x = random_floats(static_cast<std::size_t>(count), 22);
    const auto dy = random_floats(x.size(), 23);
    std::vector<float> y(x.size());
    k.relu_forward(count, DType::f32, x.data(), y.data());
    std::vector<float> dx = nan_filled(x.size());
    k.relu_backward(count, DType::f32, y.data(), dy.data(), dx.data());
    std::vector<double> dx_ref(x.size());
    const auto yd = to_double(y), dyd = to_double(dy);
    reference::relu_backward(count, yd.data(), dyd.data(), dx_ref.data());
    EXPECT_TRUE(all_close(dx, dx_ref, 0.0, 0.0));
  }
}

TEST(ReluKernel, InPlace) {
  // The executor may run relu in place (y == x) and its backward in place
  // (dx == dy) when nothing else reads those tensors.
  CpuKernels k;
  const std::int64_t count = 1000;
  const auto x = random_floats(static_cast<std::size_t>(count), 24);
  const auto dy = random_floats(x.size(), 25);
  std::vector<float> expected_y(x.size()), expected_dx(x.size());
  k.relu_forward(count, DType::f32, x.data(), expected_y.data());
  k.relu_backward(count, DType::f32, expected_y.data(), dy.data(), expected_dx.data());

  std::vector<float> buf = x;
  k.relu_forward(count, DType::f32, buf.data(), buf.data());
  EXPECT_EQ(buf, expected_y);
  std::vector<float> grad = dy;
  k.relu_backward(count, DType::f32, buf.data(), grad.data(), grad.data());
  EXPECT_EQ(grad, expected_dx);
}

TEST(ReluKernel, ZeroCountIsANoOp) {
  CpuKernels k;
  k.relu_forward(0, DType::f32, nullptr, nullptr);
  k.relu_backward(0, DType::f32, nullptr, nullptr, nullptr);
  // ... and touches nothing past what it is given: a count of 0 on real
  // buffers leaves them as they were.
  std::vector<float> x = {-1.0f, 2.0f}, y = {7.0f, 7.0f};
  k.relu_forward(0, DType::f32, x.data(), y.data());
  k.relu_backward(0, DType::f32, x.data(), x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{7.0f, 7.0f}));
}

}  // namespace
}  // namespace tidepool
