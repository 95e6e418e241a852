// Max and average pooling against the cpu device, forward and backward.
//
// Max pooling selects values, so y matches exactly; its gradient adds at
// most a few dy values per input (overlapping windows), exact up to the
// order of those additions (1e-6 absolute). Average pooling sums up to
// kh*kw values and scales: 1e-5 relative, 1e-6 absolute.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::bit_equal;
using testing::close_to_cpu;
using testing::distinct_floats;
using testing::GpuTest;
using testing::pool_shape;
using testing::PoolCase;
using testing::random_floats;

std::vector<PoolCase> cases() {
  return {
      {"max_2x2_s2", pool_shape(PoolKind::max, 2, 8, 16, 16, 2, 2)},
      {"max_2x2_s2_odd", pool_shape(PoolKind::max, 2, 8, 9, 11, 2, 2)},
      {"max_3x3_s2_pad1", pool_shape(PoolKind::max, 2, 8, 15, 15, 3, 2, 1)},
      {"max_3x3_s1_pad1", pool_shape(PoolKind::max, 2, 4, 8, 8, 3, 1, 1)},
      {"avg_2x2_s1", pool_shape(PoolKind::avg, 2, 8, 8, 8, 2, 1)},
      {"avg_3x3_s1_pad1", pool_shape(PoolKind::avg, 2, 8, 9, 9, 3, 1, 1)},
      {"avg_2x2_s2", pool_shape(PoolKind::avg, 4, 16, 16, 16, 2, 2)},
      {"global_avg_4x4", pool_shape(PoolKind::avg, 8, 64, 4, 4, 4, 4)},
      {"global_avg_7x7", pool_shape(PoolKind::avg, 4, 32, 7, 7, 7, 7)},
  };
}

class GpuPool : public GpuTest {};

TEST_F(GpuPool, ForwardAndBackwardMatchTheCpuDevice) {
  for (const PoolCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const PoolShape& s = c.shape;
    const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const auto ny = static_cast<std::size_t>(s.n * s.c * s.out_h() * s.out_w());
    // Distinct values: a max pool's gradient is only defined where the
    // window maximum is unique.
    const std::vector<float> x = distinct_floats(nx, 41), dy = random_floats(ny, 42);
    std::vector<float> y(ny), dx(nx);
    std::vector<std::byte> cpu_saved(cpu.pool_saved_bytes(s));
    cpu.pool_forward(s, x.data(), y.data(), cpu_saved.empty() ? nullptr : cpu_saved.data());
    cpu.pool_backward(s, x.data(), dy.data(), cpu_saved.empty() ? nullptr : cpu_saved.data(),
                      dx.data());

    const std::size_t saved_bytes = kernels().pool_saved_bytes(s);
    EXPECT_EQ(saved_bytes, s.kind == PoolKind::max ? ny : 0u)
        << "one byte per output for max pooling";
    float *gx = upload(x), *gdy = upload(dy), *gy = nan_buffer(ny), *gdx = nan_buffer(nx);
    void* saved = alloc_bytes(saved_bytes);
    run([&](Kernels& k) {
      k.pool_forward(s, gx, gy, saved);
      k.pool_backward(s, gx, gdy, saved, gdx);
    });
    if (s.kind == PoolKind::max) {
      EXPECT_TRUE(bit_equal(download(gy, ny), y));
      EXPECT_TRUE(close_to_cpu(download(gdx, nx), dx, 0.0, 1e-6));
    } else {
      EXPECT_TRUE(close_to_cpu(download(gy, ny), y, 1e-5, 1e-6));
      EXPECT_TRUE(close_to_cpu(download(gdx, nx), dx, 1e-5, 1e-6));
    }
  }
}

TEST_F(GpuPool, MaxPoolingWithoutSavedIndicesStillComputesY) {
  const PoolShape s = pool_shape(PoolKind::max, 2, 4, 8, 8, 2, 2);
  const auto nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
  const auto ny = static_cast<std::size_t>(s.n * s.c * s.out_h() * s.out_w());
  const std::vector<float> x = distinct_floats(nx, 43);
  std::vector<float> y(ny);
  cpu.pool_forward(s, x.data(), y.data(), nullptr);
  float *gx = upload(x), *gy = nan_buffer(ny);
  run([&](Kernels& k) { k.pool_forward(s, gx, gy, nullptr); });  // evaluation
  EXPECT_TRUE(bit_equal(download(gy, ny), y));
  EXPECT_THROW(run([&](Kernels& k) { k.pool_backward(s, gx, gy, nullptr, gy); }),
               std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
