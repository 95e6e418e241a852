// Gradient checks: the analytic gradients the cpu kernels' backward passes
// produce, for inputs and parameters, against numerical derivatives.
//
// Every check differentiates a scalar loss L = sum(y * r), r a fixed random
// tensor (so dL/dy = r is what the backward kernels receive), by central
// differences through the double-precision REFERENCE forward with
// eps = 1e-6. In double that derivative is accurate to ~1e-9, so the
// tolerance only has to absorb the float rounding of the kernels
// (rtol 1e-3). Finite differences through the float kernels themselves
// would need eps ~1e-2 and a loose tolerance, and would be noisy. The
// reference forward is itself pinned to the oneDNN forward by the per-op
// *_test.cpp files, and the reference backward is checked here too, so the
// chain kernel-forward = reference-forward, d(reference-forward) =
// kernel-backward is closed.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "reference/batchnorm.h"
#include "reference/conv2d.h"
#include "reference/dropout.h"
#include "reference/elementwise.h"
#include "reference/linear.h"
#include "reference/pooling.h"
#include "reference/relu.h"
#include "reference/softmax_xent.h"
#include "testing/kernel_testing.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::away_from_zero;
using testing::distinct_floats;
using testing::dot;
using testing::numeric_gradient;
using testing::random_floats;
using testing::to_double;

constexpr double kKernelRtol = 1e-3;
constexpr double kKernelAtol = 1e-4;
constexpr double kReferenceTol = 1e-6;

// ---- convolution ----------------------------------------------------------

ConvShape conv(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
               std::int64_t r) {
  ConvShape s;
  s.n = n;
  s.c = c;
  s.h = h;
  s.w = w;
  s.k = k;
  s.r = s.s = r;
  return s;
}

// Checks dL/dx, dL/dw (and dL/db) of one convolution for both schemes.
void check_conv(const ConvShape& s) {
  const std::size_t nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
  const std::size_t ny = static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w());
  const auto x = random_floats(nx, 101);
  const auto w = random_floats(static_cast<std::size_t>(s.weight_numel()), 102);
  const auto b = random_floats(static_cast<std::size_t>(s.k), 103);
  const auto r = random_floats(ny, 104);

  std::vector<double> xd = to_double(x), wd = to_double(w), bd = to_double(b);
  const std::vector<double> rd = to_double(r);
  std::vector<double> y(ny);
  const std::function<double()> loss = [&] {
    reference::conv2d_forward(s, xd.data(), wd.data(), s.bias ? bd.data() : nullptr, y.data());
    return dot(y, rd);
  };
  const auto num_dx = numeric_gradient(xd, loss);
  const auto num_dw = numeric_gradient(wd, loss);
  const auto num_db = numeric_gradient(bd, loss);

  std::vector<double> ref_dx(nx), ref_dw(w.size()), ref_db(b.size());
  reference::conv2d_backward_data(s, rd.data(), wd.data(), ref_dx.data());
  reference::conv2d_backward_weights(s, xd.data(), rd.data(), ref_dw.data(),
                                     s.bias ? ref_db.data() : nullptr);
  EXPECT_TRUE(all_close(ref_dx, num_dx, kReferenceTol, kReferenceTol)) << "reference dx";
  EXPECT_TRUE(all_close(ref_dw, num_dw, kReferenceTol, kReferenceTol)) << "reference dw";

  CpuKernels k;
  for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p}) {
    SCOPED_TRACE(std::string("scheme ") + (scheme == ConvScheme::m ? "m" : "p"));
    std::vector<std::byte> ws_data(k.conv_workspace_bytes(s, scheme, ConvPass::backward_data));
    std::vector<std::byte> ws_weights(
        k.conv_workspace_bytes(s, scheme, ConvPass::backward_weights));
    std::vector<float> dx(nx), dw(w.size()), db(b.size());
    k.conv_backward_data(s, scheme, r.data(), w.data(), dx.data(), ws_data.data());
    k.conv_backward_weights(s, scheme, x.data(), r.data(), dw.data(), s.bias ? db.data() : nullptr,
                            ws_weights.data());
    EXPECT_TRUE(all_close(dx, num_dx, kKernelRtol, kKernelAtol)) << "dx";
    EXPECT_TRUE(all_close(dw, num_dw, kKernelRtol, kKernelAtol)) << "dw";
    if (s.bias) {
      EXPECT_TRUE(all_close(db, num_db, kKernelRtol, kKernelAtol)) << "db";
    }
  }
}

TEST(GradCheck, Conv2d) {
  {
    SCOPED_TRACE("stride 2, padding 1, bias, 8 channels (blocked kernels)");
    ConvShape s = conv(2, 8, 7, 6, 8, 3);
    s.stride_h = s.stride_w = 2;
    s.pad_h = s.pad_w = 1;
    s.bias = true;
    check_conv(s);
  }
  {
    SCOPED_TRACE("dilation 2, padding 2");
    ConvShape s = conv(1, 3, 7, 7, 4, 3);
    s.dil_h = s.dil_w = 2;
    s.pad_h = s.pad_w = 2;
    check_conv(s);
  }
  {
    SCOPED_TRACE("groups 2, padding 1, bias");
    ConvShape s = conv(2, 4, 5, 5, 6, 3);
    s.groups = 2;
    s.pad_h = s.pad_w = 1;
    s.bias = true;
    check_conv(s);
  }
  {
    SCOPED_TRACE("1x1 stride 2 (projection shortcut)");
    ConvShape s = conv(2, 4, 6, 6, 8, 1);
    s.stride_h = s.stride_w = 2;
    check_conv(s);
  }
}

TEST(GradCheck, DepthwiseConv) {
  {
    SCOPED_TRACE("3x3, padding 1, bias");
    ConvShape s = conv(2, 8, 6, 6, 8, 3);
    s.groups = 8;
    s.pad_h = s.pad_w = 1;
    s.bias = true;
    check_conv(s);
  }
  {
    SCOPED_TRACE("3x3, stride 2, padding 1");
    ConvShape s = conv(2, 8, 7, 7, 8, 3);
    s.groups = 8;
    s.stride_h = s.stride_w = 2;
    s.pad_h = s.pad_w = 1;
    check_conv(s);
  }
}

// ---- batch normalisation ----------------------------------------------------

TEST(GradCheck, BatchNorm) {
  BatchNormShape s;
  s.n = 3;
  s.c = 4;
  s.h = 3;
  s.w = 3;
  const std::size_t count = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
  const auto x = random_floats(count, 111);
  const auto gamma = random_floats(4, 112, 0.5f, 1.5f);
  const auto beta = random_floats(4, 113);
  const auto r = random_floats(count, 114);

  std::vector<double> xd = to_double(x), gd = to_double(gamma), bd = to_double(beta);
  const std::vector<double> rd = to_double(r);
  std::vector<double> y(count), mean(4), var(4);
  const std::function<double()> loss = [&] {
    reference::batchnorm_forward_train(s, xd.data(), gd.data(), bd.data(), y.data(), mean.data(),
                                       var.data(), nullptr, nullptr);
    return dot(y, rd);
  };
  const auto num_dx = numeric_gradient(xd, loss);
  const auto num_dgamma = numeric_gradient(gd, loss);
  const auto num_dbeta = numeric_gradient(bd, loss);

  loss();  // leaves the batch statistics of the unperturbed input in mean/var
  std::vector<double> ref_dx(count), ref_dg(4), ref_db(4);
  reference::batchnorm_backward(s, xd.data(), rd.data(), gd.data(), mean.data(), var.data(),
                                ref_dx.data(), ref_dg.data(), ref_db.data());
  EXPECT_TRUE(all_close(ref_dx, num_dx, kReferenceTol, kReferenceTol)) << "reference dx";
  EXPECT_TRUE(all_close(ref_dg, num_dgamma, kReferenceTol, kReferenceTol)) << "reference dgamma";

  CpuKernels k;
  std::vector<float> yk(count), saved_mean(4), saved_var(4), dx(count), dgamma(4), dbeta(4);
  k.batchnorm_forward_train(s, x.data(), gamma.data(), beta.data(), yk.data(), saved_mean.data(),
                            saved_var.data(), nullptr, nullptr, nullptr);
  k.batchnorm_backward(s, x.data(), r.data(), gamma.data(), saved_mean.data(), saved_var.data(),
                       dx.data(), dgamma.data(), dbeta.data(), nullptr);
  EXPECT_TRUE(all_close(dx, num_dx, kKernelRtol, kKernelAtol)) << "dx";
  EXPECT_TRUE(all_close(dgamma, num_dgamma, kKernelRtol, kKernelAtol)) << "dgamma";
  EXPECT_TRUE(all_close(dbeta, num_dbeta, kKernelRtol, kKernelAtol)) << "dbeta";
}

// ---- pooling ------------------------------------------------------------------

PoolShape pool(PoolKind kind, std::int64_t h, std::int64_t w, std::int64_t k, std::int64_t stride,
               std::int64_t pad) {
  PoolShape s;
  s.kind = kind;
  s.n = 2;
  s.c = 3;
  s.h = h;
  s.w = w;
  s.kh = s.kw = k;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  return s;
}

void check_pool(const PoolShape& s) {
  const std::size_t nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
  const std::size_t ny = static_cast<std::size_t>(s.n * s.c * s.out_h() * s.out_w());
  // Distinct values 0.01 apart: no ties, and +-1e-6 never changes a window's
  // maximum, so max pooling is differentiable at every input.
  const auto x = distinct_floats(nx, 121);
  const auto r = random_floats(ny, 122);

  std::vector<double> xd = to_double(x);
  const std::vector<double> rd = to_double(r);
  std::vector<double> y(ny);
  const std::function<double()> loss = [&] {
    reference::pool_forward(s, xd.data(), y.data());
    return dot(y, rd);
  };
  const auto num_dx = numeric_gradient(xd, loss);

  std::vector<double> ref_dx(nx);
  reference::pool_backward(s, xd.data(), rd.data(), ref_dx.data());
  EXPECT_TRUE(all_close(ref_dx, num_dx, kReferenceTol, kReferenceTol)) << "reference dx";

  CpuKernels k;
  std::vector<std::byte> saved(k.pool_saved_bytes(s));
  void* saved_ptr = saved.empty() ? nullptr : saved.data();
  std::vector<float> yk(ny), dx(nx);
  k.pool_forward(s, x.data(), yk.data(), saved_ptr);
  k.pool_backward(s, x.data(), r.data(), saved_ptr, dx.data());
  EXPECT_TRUE(all_close(dx, num_dx, kKernelRtol, kKernelAtol)) << "dx";
}

TEST(GradCheck, MaxPool) {
  {
    SCOPED_TRACE("2x2 stride 2");
    check_pool(pool(PoolKind::max, 6, 6, 2, 2, 0));
  }
  {
    SCOPED_TRACE("3x3 stride 2 padding 1 (overlapping windows)");
    check_pool(pool(PoolKind::max, 7, 6, 3, 2, 1));
  }
}

TEST(GradCheck, AvgPool) {
  {
    SCOPED_TRACE("2x2 stride 2");
    check_pool(pool(PoolKind::avg, 6, 6, 2, 2, 0));
  }
  {
    SCOPED_TRACE("3x3 stride 2 padding 1 (padding counted)");
    check_pool(pool(PoolKind::avg, 7, 6, 3, 2, 1));
  }
}

TEST(GradCheck, GlobalAvgPool) {
  // ResNet's head: one window over the whole (here non-square) plane.
  PoolShape s = pool(PoolKind::avg, 4, 5, 4, 1, 0);
  s.kw = 5;
  check_pool(s);
}

// ---- fully connected ------------------------------------------------------------

TEST(GradCheck, Linear) {
  LinearShape s;
  s.n = 3;
  s.in = 7;
  s.out = 5;
  const auto x = random_floats(21, 131);
  const auto w = random_floats(35, 132);
  const auto b = random_floats(5, 133);
  const auto r = random_floats(15, 134);

  std::vector<double> xd = to_double(x), wd = to_double(w), bd = to_double(b);
  const std::vector<double> rd = to_double(r);
  std::vector<double> y(15);
  const std::function<double()> loss = [&] {
    reference::linear_forward(s, xd.data(), wd.data(), bd.data(), y.data());
    return dot(y, rd);
  };
  const auto num_dx = numeric_gradient(xd, loss);
  const auto num_dw = numeric_gradient(wd, loss);
  const auto num_db = numeric_gradient(bd, loss);

  std::vector<double> ref_dx(21), ref_dw(35), ref_db(5);
  reference::linear_backward_data(s, rd.data(), wd.data(), ref_dx.data());
  reference::linear_backward_weights(s, xd.data(), rd.data(), ref_dw.data(), ref_db.data());
  EXPECT_TRUE(all_close(ref_dx, num_dx, kReferenceTol, kReferenceTol)) << "reference dx";
  EXPECT_TRUE(all_close(ref_dw, num_dw, kReferenceTol, kReferenceTol)) << "reference dw";

  CpuKernels k;
  std::vector<float> dx(21), dw(35), db(5);
  k.linear_backward_data(s, r.data(), w.data(), dx.data());
  k.linear_backward_weights(s, x.data(), r.data(), dw.data(), db.data());
  EXPECT_TRUE(all_close(dx, num_dx, kKernelRtol, kKernelAtol)) << "dx";
  EXPECT_TRUE(all_close(dw, num_dw, kKernelRtol, kKernelAtol)) << "dw";
  EXPECT_TRUE(all_close(db, num_db, kKernelRtol, kKernelAtol)) << "db";
}

// ---- elementwise and the rest ------------------------------------------------------

TEST(GradCheck, Relu) {
  const std::int64_t count = 60;
  // Kept 0.05 away from the kink at zero, where the derivative is undefined.
  const auto x = away_from_zero(count, 141);
  const auto r = random_floats(count, 142);
  std::vector<double> xd = to_double(x);
  const std::vector<double> rd = to_double(r);
  std::vector<double> y(count);
  const auto num_dx = numeric_gradient(xd, [&] {
    reference::relu_forward(count, xd.data(), y.data());
    return dot(y, rd);
  });

  CpuKernels k;
  std::vector<float> yk(count), dx(count);
  k.relu_forward(count, DType::f32, x.data(), yk.data());
  k.relu_backward(count, DType::f32, yk.data(), r.data(), dx.data());
  EXPECT_TRUE(all_close(dx, num_dx, kKernelRtol, kKernelAtol));
}

TEST(GradCheck, Add) {
  // y = a + b: both inputs receive dy unchanged, which the executor does by
  // handing dy on (or copying it) to each branch.
  const std::int64_t count = 40;
  const auto a = random_floats(count, 151);
  const auto b = random_floats(count, 152);
  const auto r = random_floats(count, 153);
  std::vector<double> ad = to_double(a), bd = to_double(b);
  const std::vector<double> rd = to_double(r);
  std::vector<double> y(count);
  const std::function<double()> loss = [&] {
    reference::add_forward(count, ad.data(), bd.data(), y.data());
    return dot(y, rd);
  };
  const auto num_da = numeric_gradient(ad, loss);
  const auto num_db = numeric_gradient(bd, loss);

  CpuKernels k;
  std::vector<float> da(count), db(count);
  k.copy(count, r.data(), da.data());
  k.copy(count, r.data(), db.data());
  EXPECT_TRUE(all_close(da, num_da, kKernelRtol, kKernelAtol)) << "da";
  EXPECT_TRUE(all_close(db, num_db, kKernelRtol, kKernelAtol)) << "db";
  // And the forward kernel computes the function being differentiated.
  std::vector<float> yk(count);
  k.add_forward(count, DType::f32, a.data(), b.data(), yk.data());
  loss();
  EXPECT_TRUE(all_close(yk, y, 1e-6, 1e-7));
}

TEST(GradCheck, SoftmaxCrossEntropy) {
  // The loss is already a scalar (the batch mean); it is differentiated
  // directly rather than through sum(y * r).
  const std::int64_t n = 4, classes = 5;
  const auto logits = random_floats(20, 161, -2.0f, 2.0f);
  const std::vector<std::int32_t> labels = {0, 3, 4, 1};
  std::vector<double> ld = to_double(logits);
  std::vector<double> probs(20);
  const auto num = numeric_gradient(ld, [&] {
    return reference::softmax_xent_forward(n, classes, ld.data(), labels.data(), probs.data()).loss;
  });

  std::vector<double> ref_d(20);
  reference::softmax_xent_forward(n, classes, ld.data(), labels.data(), probs.data());
  reference::softmax_xent_backward(n, classes, probs.data(), labels.data(), ref_d.data());
  EXPECT_TRUE(all_close(ref_d, num, kReferenceTol, kReferenceTol)) << "reference";

  CpuKernels k;
  std::vector<float> pk(20), out(3), d(20);
  k.softmax_xent_forward(n, classes, logits.data(), labels.data(), pk.data(), out.data());
  k.softmax_xent_backward(n, classes, pk.data(), labels.data(), d.data());
  EXPECT_TRUE(all_close(d, num, kKernelRtol, 1e-6));
}

TEST(GradCheck, Dropout) {
  // With the seed fixed the mask is a constant, so y = x * mask is linear
  // in x and its gradient is r * mask. The reference draws its own mask
  // from the same recipe, so this also ties the kernel's mask to it.
  const std::int64_t count = 200;
  const float p = 0.3f;
  const std::uint64_t seed = 77;
  const auto x = random_floats(count, 171);
  const auto r = random_floats(count, 172);
  std::vector<double> xd = to_double(x);
  const std::vector<double> rd = to_double(r);
  std::vector<double> y(count), mask(count);
  const auto num_dx = numeric_gradient(xd, [&] {
    reference::dropout_forward(count, p, seed, xd.data(), y.data(), mask.data());
    return dot(y, rd);
  });

  CpuKernels k;
  std::vector<float> yk(count), mk(count), dx(count);
  k.dropout_forward(count, p, seed, x.data(), yk.data(), mk.data());
  k.dropout_backward(count, mk.data(), r.data(), dx.data());
  EXPECT_TRUE(all_close(dx, num_dx, kKernelRtol, kKernelAtol));
}

TEST(GradCheck, Flatten) {
  // Flatten is a copy into a [n, c*h*w] view of the same order: forward and
  // backward are the identity map on the flat data.
  const std::int64_t n = 2, c = 3, h = 4, w = 5, count = n * c * h * w;
  const auto x = random_floats(count, 181);
  const auto r = random_floats(count, 182);
  CpuKernels k;
  std::vector<float> y(count), dx(count);
  k.copy(count, x.data(), y.data());
  EXPECT_EQ(y, x) << "forward is the identity";
  k.copy(count, r.data(), dx.data());
  EXPECT_EQ(dx, r) << "backward is the identity";

  std::vector<double> xd = to_double(x);
  const std::vector<double> rd = to_double(r);
  std::vector<double> yd(count);
  const auto num_dx = numeric_gradient(xd, [&] {
    reference::copy(count, xd.data(), yd.data());
    return dot(yd, rd);
  });
  EXPECT_TRUE(all_close(dx, num_dx, kKernelRtol, kKernelAtol));
}

}  // namespace
}  // namespace tidepool
