// cuBLAS fully connected layers against the cpu device (oneDNN), forward
// and both backward passes, with and without bias.
//
// Tolerances: sums of up to 512 products of values in [-1, 1] (over `in`
// forward, `out` for dx, `n` for dW and db) in f32 in different orders,
// whose rounding grows with the sum of the terms' magnitudes rather than
// the result's: 1e-4 relative, 1e-4 absolute.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::close_to_cpu;
using testing::describe;
using testing::GpuTest;
using testing::random_floats;

class GpuLinear : public GpuTest {};

TEST_F(GpuLinear, ForwardAndBackwardMatchTheCpuDevice) {
  const LinearShape shapes[] = {{8, 64, 10}, {33, 100, 47}, {128, 512, 10}, {1, 7, 3}};
  for (const LinearShape& s : shapes) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(describe(s) + (bias ? " bias" : ""));
      const auto nx = static_cast<std::size_t>(s.n * s.in),
                 ny = static_cast<std::size_t>(s.n * s.out);
      const auto nw = static_cast<std::size_t>(s.out * s.in), nb = static_cast<std::size_t>(s.out);
      const std::vector<float> x = random_floats(nx, 51), w = random_floats(nw, 52),
                               b = random_floats(nb, 53), dy = random_floats(ny, 54);
      std::vector<float> y(ny), dx(nx), dw(nw), db(nb);
      cpu.linear_forward(s, x.data(), w.data(), bias ? b.data() : nullptr, y.data());
      cpu.linear_backward_data(s, dy.data(), w.data(), dx.data());
      cpu.linear_backward_weights(s, x.data(), dy.data(), dw.data(), bias ? db.data() : nullptr);

      float *gx = upload(x), *gw = upload(w), *gb = upload(b), *gdy = upload(dy);
      float *gy = nan_buffer(ny), *gdx = nan_buffer(nx), *gdw = nan_buffer(nw),
            *gdb = nan_buffer(nb);
      run([&](Kernels& k) {
        k.linear_forward(s, gx, gw, bias ? gb : nullptr, gy);
        k.linear_backward_data(s, gdy, gw, gdx);
        k.linear_backward_weights(s, gx, gdy, gdw, bias ? gdb : nullptr);
      });
      EXPECT_TRUE(close_to_cpu(download(gy, ny), y, 1e-4, 1e-4));
      EXPECT_TRUE(close_to_cpu(download(gdx, nx), dx, 1e-4, 1e-4));
      EXPECT_TRUE(close_to_cpu(download(gdw, nw), dw, 1e-4, 1e-4));
      if (bias) EXPECT_TRUE(close_to_cpu(download(gdb, nb), db, 1e-4, 1e-4));
    }
  }
}

}  // namespace
}  // namespace tidepool
