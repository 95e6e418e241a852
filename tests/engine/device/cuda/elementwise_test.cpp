// The elementwise kernels against the cpu device: ReLU (cuDNN), add, copy,
// accumulate, dropout and SGD (ours). Each result is one correctly rounded
// operation or a selection, so the tolerance is zero: any difference is a
// bug (a fused multiply-add, a different hash, an off-by-one index). All but
// ReLU promise the very bits; ReLU's zeros may differ in sign.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_testing.h"

namespace tidepool {
namespace {

using testing::bit_equal;
using testing::close_to_cpu;
using testing::GpuTest;
using testing::random_floats;

// Not a multiple of any block size, and past one grid of 65535 blocks of
// 256 threads, so the grid-stride loops wrap.
constexpr std::int64_t kCount = 65535LL * 256 + 1237;

class GpuElementwise : public GpuTest {};

TEST_F(GpuElementwise, ReluForwardAndBackwardAreExact) {
  const auto n = static_cast<std::size_t>(kCount);
  const std::vector<float> x = random_floats(n, 61), dy = random_floats(n, 62);
  std::vector<float> y(n), dx(n);
  cpu.relu_forward(kCount, DType::f32, x.data(), y.data());
  cpu.relu_backward(kCount, DType::f32, y.data(), dy.data(), dx.data());
  float *gx = upload(x), *gdy = upload(dy), *gy = nan_buffer(n), *gdx = nan_buffer(n);
  run([&](Kernels& k) {
    k.relu_forward(kCount, DType::f32, gx, gy);
    k.relu_backward(kCount, DType::f32, gy, gdy, gdx);
  });
  // Exact values, but not bits: oneDNN may write a negative input's output
  // as 0 * x = -0 where cuDNN writes max(x, 0) = +0, and likewise for the
  // gradients that are zero. Both mean zero.
  EXPECT_TRUE(close_to_cpu(download(gy, n), y, 0.0, 0.0));
  EXPECT_TRUE(close_to_cpu(download(gdx, n), dx, 0.0, 0.0));
}

TEST_F(GpuElementwise, AddCopyAndAccumulateAreExact) {
  const auto n = static_cast<std::size_t>(kCount);
  const std::vector<float> a = random_floats(n, 63), b = random_floats(n, 64, -1e-3f, 1e3f);
  std::vector<float> sum(n), acc = a;
  cpu.add_forward(kCount, DType::f32, a.data(), b.data(), sum.data());
  cpu.accumulate(kCount, b.data(), acc.data());
  float *ga = upload(a), *gb = upload(b), *gsum = nan_buffer(n), *gacc = upload(a),
        *gcopy = nan_buffer(n);
  run([&](Kernels& k) {
    k.add_forward(kCount, DType::f32, ga, gb, gsum);
    k.accumulate(kCount, gb, gacc);
    k.copy(kCount, gb, gcopy);
    k.copy(kCount, gcopy, gcopy);  // in place: nothing to do
  });
  EXPECT_TRUE(bit_equal(download(gsum, n), sum));
  EXPECT_TRUE(bit_equal(download(gacc, n), acc));
  EXPECT_TRUE(bit_equal(download(gcopy, n), b));
  // In place, as an add may be planned: y == a.
  run([&](Kernels& k) { k.add_forward(kCount, DType::f32, ga, gb, ga); });
  EXPECT_TRUE(bit_equal(download(ga, n), sum));
}

// --fuse relu's residual join: one f32 add and max(v, 0) on both devices,
// so the bits agree (NaN kept on both).
TEST_F(GpuElementwise, AddWithReluIsTheCpuDevicesBitForBit) {
  const auto n = static_cast<std::size_t>(kCount);
  std::vector<float> a = random_floats(n, 65), b = random_floats(n, 66);
  a[3] = std::nanf("");
  std::vector<float> y(n);
  cpu.add_relu_forward(kCount, DType::f32, a.data(), b.data(), y.data());
  float *ga = upload(a), *gb = upload(b), *gy = nan_buffer(n);
  run([&](Kernels& k) { k.add_relu_forward(kCount, DType::f32, ga, gb, gy); });
  std::vector<float> got = download(gy, n);
  EXPECT_TRUE(std::isnan(got[3]));
  y[3] = got[3] = 0.0f;
  EXPECT_TRUE(bit_equal(got, y));
}

TEST_F(GpuElementwise, DropoutDrawsTheCpuDevicesMaskBitForBit) {
  const auto n = static_cast<std::size_t>(kCount);
  const std::vector<float> x = random_floats(n, 65), dy = random_floats(n, 66);
  float *gx = upload(x), *gdy = upload(dy);
  float *gy = alloc<float>(n), *gmask = alloc<float>(n), *gdx = alloc<float>(n);
  const std::vector<float> nans = testing::nan_filled(n);
  for (float p : {0.0f, 0.1f, 0.25f, 0.5f, 0.9f, 1.0f}) {
    for (std::uint64_t seed :
         {std::uint64_t{0}, std::uint64_t{42}, std::uint64_t{0xdeadbeefcafef00d}}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " seed=" + std::to_string(seed));
      std::vector<float> y(n), mask(n), dx(n);
      cpu.dropout_forward(kCount, p, seed, x.data(), y.data(), mask.data());
      cpu.dropout_backward(kCount, mask.data(), dy.data(), dx.data());
      for (float* out : {gy, gmask, gdx}) write(out, nans);
      run([&](Kernels& k) {
        k.dropout_forward(kCount, p, seed, gx, gy, gmask);
        k.dropout_backward(kCount, gmask, gdy, gdx);
      });
      EXPECT_TRUE(bit_equal(download(gmask, n), mask));
      EXPECT_TRUE(bit_equal(download(gy, n), y));
      EXPECT_TRUE(bit_equal(download(gdx, n), dx));
    }
  }
  EXPECT_THROW(run([&](Kernels& k) { k.dropout_forward(16, 1.5f, 1, gx, gy, gmask); }),
               std::invalid_argument);
}

TEST_F(GpuElementwise, SgdUpdateIsTheCpuDevicesBitForBit) {
  const auto n = static_cast<std::size_t>(kCount);
  std::vector<float> w = random_floats(n, 67), v = random_floats(n, 68, -0.1f, 0.1f);
  const std::vector<float> dw = random_floats(n, 69);
  float *gw = upload(w), *gv = upload(v), *gdw = upload(dw);
  // A few steps with the trainer's settings and others, each on both devices.
  const float settings[][3] = {{0.1f, 0.9f, 5e-4f}, {0.05f, 0.0f, 0.0f}, {0.37f, 0.99f, 1e-2f}};
  for (const auto& st : settings) {
    cpu.sgd_update(kCount, st[0], st[1], st[2], w.data(), dw.data(), v.data(), nullptr);
    run([&](Kernels& k) { k.sgd_update(kCount, st[0], st[1], st[2], gw, gdw, gv, nullptr); });
  }
  EXPECT_TRUE(bit_equal(download(gw, n), w));
  EXPECT_TRUE(bit_equal(download(gv, n), v));
}

TEST_F(GpuElementwise, LossScalingIsTheCpuDevicesAndASkippedUpdateChangesNothing) {
  const auto n = static_cast<std::size_t>(kCount);
  std::vector<float> g = random_floats(n, 70, -1e4f, 1e4f);
  float* gg = upload(g);
  float* gflag = upload(std::vector<float>{5.0f});
  float flag = 5.0f;
  cpu.fill(1, 0.0f, &flag);
  cpu.unscale_check(kCount, g.data(), 1.0f / 65536.0f, &flag);
  run([&](Kernels& k) {
    k.fill(1, 0.0f, gflag);
    k.unscale_check(kCount, gg, 1.0f / 65536.0f, gflag);
  });
  EXPECT_TRUE(bit_equal(download(gg, n), g));
  EXPECT_EQ(download(gflag, 1)[0], 0.0f);

  std::vector<float> bad = g;
  bad[n / 2] = std::numeric_limits<float>::infinity();
  float* gbad = upload(bad);
  run([&](Kernels& k) { k.unscale_check(kCount, gbad, 0.5f, gflag); });
  EXPECT_EQ(download(gflag, 1)[0], 1.0f);

  const std::vector<float> w = random_floats(n, 71), v = random_floats(n, 72);
  float *gw = upload(w), *gv = upload(v);
  run([&](Kernels& k) { k.sgd_update(kCount, 0.1f, 0.9f, 5e-4f, gw, gg, gv, gflag); });
  EXPECT_TRUE(bit_equal(download(gw, n), w));
  EXPECT_TRUE(bit_equal(download(gv, n), v));
}

}  // namespace
}  // namespace tidepool
