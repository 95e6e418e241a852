// oneDNN inner product against the reference: forward, data gradient and
// weight/bias gradients, with and without a bias.
#include "reference/linear.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::describe;
using testing::nan_filled;
using testing::random_floats;
using testing::to_double;

std::vector<LinearShape> shapes() { return {{1, 1, 1}, {4, 16, 10}, {32, 512, 10}, {5, 33, 7}}; }

struct Data {
  std::vector<float> x, w, b, dy;
  explicit Data(const LinearShape& s)
      : x(random_floats(static_cast<std::size_t>(s.n * s.in), 41)),
        w(random_floats(static_cast<std::size_t>(s.out * s.in), 42)),
        b(random_floats(static_cast<std::size_t>(s.out), 43)),
        dy(random_floats(static_cast<std::size_t>(s.n * s.out), 44)) {}
};

TEST(LinearKernel, MatchesReferenceForward) {
  CpuKernels k;
  for (const LinearShape& s : shapes()) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(describe(s) + (bias ? " bias" : " no bias"));
      const Data d(s);
      std::vector<float> y = nan_filled(d.dy.size());
      k.linear_forward(s, d.x.data(), d.w.data(), bias ? d.b.data() : nullptr, y.data());
      std::vector<double> y_ref(y.size());
      const auto xd = to_double(d.x), wd = to_double(d.w), bd = to_double(d.b);
      reference::linear_forward(s, xd.data(), wd.data(), bias ? bd.data() : nullptr, y_ref.data());
      EXPECT_TRUE(all_close(y, y_ref, 1e-4, 1e-4));
    }
  }
}

TEST(LinearKernel, MatchesReferenceBackwardData) {
  CpuKernels k;
  for (const LinearShape& s : shapes()) {
    SCOPED_TRACE(describe(s));
    const Data d(s);
    std::vector<float> dx = nan_filled(d.x.size());
    k.linear_backward_data(s, d.dy.data(), d.w.data(), dx.data());
    std::vector<double> dx_ref(dx.size());
    const auto dyd = to_double(d.dy), wd = to_double(d.w);
    reference::linear_backward_data(s, dyd.data(), wd.data(), dx_ref.data());
    EXPECT_TRUE(all_close(dx, dx_ref, 1e-4, 1e-4));
  }
}

TEST(LinearKernel, MatchesReferenceBackwardWeights) {
  CpuKernels k;
  for (const LinearShape& s : shapes()) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(describe(s) + (bias ? " bias" : " no bias"));
      const Data d(s);
      std::vector<float> dw = nan_filled(d.w.size()), db = nan_filled(d.b.size());
      k.linear_backward_weights(s, d.x.data(), d.dy.data(), dw.data(), bias ? db.data() : nullptr);
      std::vector<double> dw_ref(dw.size()), db_ref(db.size());
      const auto xd = to_double(d.x), dyd = to_double(d.dy);
      reference::linear_backward_weights(s, xd.data(), dyd.data(), dw_ref.data(),
                                         bias ? db_ref.data() : nullptr);
      EXPECT_TRUE(all_close(dw, dw_ref, 1e-4, 1e-4));
      if (bias) {
        EXPECT_TRUE(all_close(db, db_ref, 1e-4, 1e-4));
      }
    }
  }
}

}  // namespace
}  // namespace tidepool
