// oneDNN convolution against the double reference, for both algorithm
// schemes and all three passes, plus the workspace contract the planner
// relies on (size known up front, deterministic, sufficient, m <= p).
#include "reference/conv2d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::conv_shape;
using testing::ConvCase;
using testing::kAllPasses;
using testing::kBothSchemes;
using testing::nan_filled;
using testing::random_floats;
using testing::scheme_name;
using testing::to_double;

// The shared cases, and one only oneDNN needs: a larger batch with few
// channels, where the m scheme's smallest workspace is the plain-layout
// GEMM implementation, not the blocked JIT one.
std::vector<ConvCase> cases() {
  std::vector<ConvCase> out = testing::conv_cases();
  ConvShape s = conv_shape(12, 8, 8, 8, 8, 3, 3, 1, 1);
  s.bias = true;
  out.push_back({"batch12_gemm_bias", s});
  return out;
}

// Operands for one case, with the double reference's results for dy = a
// fixed random tensor.
struct Data {
  std::vector<float> x, w, b, dy;
  std::vector<double> y_ref, dx_ref, dw_ref, db_ref;

  explicit Data(const ConvShape& s) {
    const std::size_t nx = static_cast<std::size_t>(s.n * s.c * s.h * s.w);
    const std::size_t ny = static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w());
    x = random_floats(nx, 1);
    w = random_floats(static_cast<std::size_t>(s.weight_numel()), 2);
    b = random_floats(static_cast<std::size_t>(s.k), 3);
    dy = random_floats(ny, 4);
    const std::vector<double> xd = to_double(x), wd = to_double(w), bd = to_double(b),
                              dyd = to_double(dy);
    y_ref.resize(ny);
    dx_ref.resize(nx);
    dw_ref.resize(w.size());
    db_ref.resize(b.size());
    reference::conv2d_forward(s, xd.data(), wd.data(), s.bias ? bd.data() : nullptr, y_ref.data());
    reference::conv2d_backward_data(s, dyd.data(), wd.data(), dx_ref.data());
    reference::conv2d_backward_weights(s, xd.data(), dyd.data(), dw_ref.data(),
                                       s.bias ? db_ref.data() : nullptr);
  }
};

// Float accumulation over at most c/groups*r*s = 144 products of values in
// [-1, 1] (and over n*oh*ow for weight gradients) stays well inside this.
constexpr double kRtol = 1e-4;
constexpr double kAtol = 2e-4;

std::vector<std::byte> workspace_for(CpuKernels& k, const ConvShape& s, ConvScheme scheme,
                                     ConvPass pass) {
  return std::vector<std::byte>(k.conv_workspace_bytes(s, scheme, pass));
}

TEST(Conv2dKernel, MatchesReferenceForward) {
  CpuKernels k;
  for (const ConvCase& c : cases()) {
    const Data d(c.shape);
    for (ConvScheme scheme : kBothSchemes) {
      SCOPED_TRACE(c.name + " scheme " + scheme_name(scheme) + " (" +
                   k.conv_algorithm_name(c.shape, scheme, ConvPass::forward) + ")");
      auto ws = workspace_for(k, c.shape, scheme, ConvPass::forward);
      std::vector<float> y = nan_filled(d.y_ref.size());
      k.conv_forward(c.shape, scheme, d.x.data(), d.w.data(), c.shape.bias ? d.b.data() : nullptr,
                     y.data(), ws.data());
      EXPECT_TRUE(all_close(y, d.y_ref, kRtol, kAtol));
    }
  }
}

TEST(Conv2dKernel, MatchesReferenceBackwardData) {
  CpuKernels k;
  for (const ConvCase& c : cases()) {
    const Data d(c.shape);
    for (ConvScheme scheme : kBothSchemes) {
      SCOPED_TRACE(c.name + " scheme " + scheme_name(scheme) + " (" +
                   k.conv_algorithm_name(c.shape, scheme, ConvPass::backward_data) + ")");
      auto ws = workspace_for(k, c.shape, scheme, ConvPass::backward_data);
      std::vector<float> dx = nan_filled(d.dx_ref.size());
      k.conv_backward_data(c.shape, scheme, d.dy.data(), d.w.data(), dx.data(), ws.data());
      EXPECT_TRUE(all_close(dx, d.dx_ref, kRtol, kAtol));
    }
  }
}

TEST(Conv2dKernel, MatchesReferenceBackwardWeights) {
  CpuKernels k;
  for (const ConvCase& c : cases()) {
    const Data d(c.shape);
    for (ConvScheme scheme : kBothSchemes) {
      SCOPED_TRACE(c.name + " scheme " + scheme_name(scheme) + " (" +
                   k.conv_algorithm_name(c.shape, scheme, ConvPass::backward_weights) + ")");
      auto ws = workspace_for(k, c.shape, scheme, ConvPass::backward_weights);
      std::vector<float> dw = nan_filled(d.dw_ref.size());
      std::vector<float> db = nan_filled(d.db_ref.size());
      k.conv_backward_weights(c.shape, scheme, d.x.data(), d.dy.data(), dw.data(),
                              c.shape.bias ? db.data() : nullptr, ws.data());
      // Weight gradients sum over n*oh*ow positions; the tolerance scales
      // with the magnitude that accumulates.
      EXPECT_TRUE(all_close(dw, d.dw_ref, kRtol, kAtol * 4));
      if (c.shape.bias) {
        EXPECT_TRUE(all_close(db, d.db_ref, kRtol, kAtol * 4));
      }
    }
  }
}

// The shapes of a CIFAR ResNet-18's convolutions at batch 32.
std::vector<ConvShape> resnet_shapes() {
  ConvShape depthwise = conv_shape(32, 128, 16, 16, 128, 3, 3, 1, 1);
  depthwise.groups = 128;
  return {conv_shape(32, 64, 32, 32, 64, 3, 3, 1, 1),    //
          conv_shape(32, 64, 32, 32, 128, 3, 3, 2, 1),   //
          conv_shape(32, 128, 16, 16, 128, 3, 3, 1, 1),  //
          conv_shape(32, 64, 32, 32, 128, 1, 1, 2, 0),   //
          conv_shape(32, 3, 32, 32, 64, 3, 3, 1, 1),     //
          depthwise};
}

TEST(Conv2dKernel, MemorySchemeNeedsNoMoreWorkspaceThanPerformance) {
  CpuKernels k;
  std::vector<ConvShape> shapes = resnet_shapes();
  for (const ConvCase& c : cases()) shapes.push_back(c.shape);
  bool some_smaller = false;
  for (const ConvShape& s : shapes) {
    for (ConvPass pass : kAllPasses) {
      const std::size_t m = k.conv_workspace_bytes(s, ConvScheme::m, pass);
      const std::size_t p = k.conv_workspace_bytes(s, ConvScheme::p, pass);
      EXPECT_LE(m, p) << "c=" << s.c << " k=" << s.k << " h=" << s.h << " pass "
                      << static_cast<int>(pass);
      some_smaller = some_smaller || m < p;
    }
  }
  // Otherwise the two schemes would be one and the planner's trade-off moot.
  EXPECT_TRUE(some_smaller);
}

TEST(Conv2dKernel, WorkspaceSizeIsDeterministic) {
  CpuKernels first;
  std::vector<std::size_t> sizes;
  for (const ConvShape& s : resnet_shapes()) {
    for (ConvScheme scheme : kBothSchemes) {
      for (ConvPass pass : kAllPasses) sizes.push_back(first.conv_workspace_bytes(s, scheme, pass));
    }
  }
  // Asked again, asked of a fresh table, and asked from another thread
  // (where the planner runs): always the same numbers.
  CpuKernels second;
  std::vector<std::size_t> again, fresh, threaded;
  for (const ConvShape& s : resnet_shapes()) {
    for (ConvScheme scheme : kBothSchemes) {
      for (ConvPass pass : kAllPasses) {
        again.push_back(first.conv_workspace_bytes(s, scheme, pass));
        fresh.push_back(second.conv_workspace_bytes(s, scheme, pass));
      }
    }
  }
  CpuKernels third;
  std::thread planner([&] {
    for (const ConvShape& s : resnet_shapes()) {
      for (ConvScheme scheme : kBothSchemes) {
        for (ConvPass pass : kAllPasses)
          threaded.push_back(third.conv_workspace_bytes(s, scheme, pass));
      }
    }
  });
  planner.join();
  EXPECT_EQ(sizes, again);
  EXPECT_EQ(sizes, fresh);
  EXPECT_EQ(sizes, threaded);
}

TEST(Conv2dKernel, ExactWorkspaceIsEnough) {
  // Two ways to catch a write past the reported size: a heap block of
  // exactly that size (AddressSanitizer builds flag any overflow from
  // instrumented code and from memcpy/memset), and a canary tail after the
  // workspace (oneDNN's JIT code is not instrumented, so it is checked by
  // looking at the bytes afterwards).
  CpuKernels k;
  constexpr std::size_t kCanary = 4096;
  constexpr unsigned char kPattern = 0xA5;
  for (const ConvCase& c : cases()) {
    const ConvShape& s = c.shape;
    const Data d(s);
    for (ConvScheme scheme : kBothSchemes) {
      for (ConvPass pass : kAllPasses) {
        SCOPED_TRACE(c.name + " scheme " + scheme_name(scheme) + " pass " +
                     std::to_string(static_cast<int>(pass)));
        const std::size_t bytes = k.conv_workspace_bytes(s, scheme, pass);
        std::unique_ptr<std::byte[]> exact(bytes > 0 ? new std::byte[bytes] : nullptr);
        std::vector<unsigned char> guarded(bytes + kCanary, kPattern);
        std::vector<float> y(d.y_ref.size()), dx(d.dx_ref.size()), dw(d.dw_ref.size()),
            db(d.db_ref.size());
        for (void* ws : {static_cast<void*>(exact.get()), static_cast<void*>(guarded.data())}) {
          switch (pass) {
            case ConvPass::forward:
              k.conv_forward(s, scheme, d.x.data(), d.w.data(), s.bias ? d.b.data() : nullptr,
                             y.data(), ws);
              break;
            case ConvPass::backward_data:
              k.conv_backward_data(s, scheme, d.dy.data(), d.w.data(), dx.data(), ws);
              break;
            case ConvPass::backward_weights:
              k.conv_backward_weights(s, scheme, d.x.data(), d.dy.data(), dw.data(),
                                      s.bias ? db.data() : nullptr, ws);
              break;
          }
        }
        const bool intact =
            std::all_of(guarded.begin() + static_cast<std::ptrdiff_t>(bytes), guarded.end(),
                        [](unsigned char v) { return v == kPattern; });
        EXPECT_TRUE(intact) << "the kernel wrote past its " << bytes << "-byte workspace";
      }
    }
  }
}

TEST(Conv2dKernel, ConcurrentCallsFromTwoStreams) {
  // The cpu device runs kernels on whichever stream worker they were
  // submitted to, so one table may be executing on two threads at once,
  // each with its own workspace.
  CpuKernels k;
  const std::vector<ConvCase> all = cases();
  const ConvShape& a = all[0].shape;
  const ConvShape& b = all[6].shape;
  const Data da(a), db(b);
  auto run = [&k](const ConvShape& s, const Data& d, ConvScheme scheme, std::vector<float>& y) {
    auto ws = workspace_for(k, s, scheme, ConvPass::forward);
    for (int i = 0; i < 20; ++i) {
      k.conv_forward(s, scheme, d.x.data(), d.w.data(), s.bias ? d.b.data() : nullptr, y.data(),
                     ws.data());
    }
  };
  std::vector<float> ya = nan_filled(da.y_ref.size()), yb = nan_filled(db.y_ref.size());
  std::thread other([&] { run(b, db, ConvScheme::m, yb); });
  run(a, da, ConvScheme::p, ya);
  other.join();
  EXPECT_TRUE(all_close(ya, da.y_ref, kRtol, kAtol));
  EXPECT_TRUE(all_close(yb, db.y_ref, kRtol, kAtol));
}

TEST(Conv2dKernel, SchemesPickDifferentAlgorithmsForResNetLayer) {
  CpuKernels k;
  const ConvShape s = resnet_shapes().front();
  const std::string m = k.conv_algorithm_name(s, ConvScheme::m, ConvPass::forward);
  const std::string p = k.conv_algorithm_name(s, ConvScheme::p, ConvPass::forward);
  EXPECT_FALSE(m.empty());
  EXPECT_FALSE(p.empty());
  // The memory scheme must never fall back to oneDNN's reference loops.
  EXPECT_EQ(m.rfind("ref:", 0), std::string::npos) << m;
  EXPECT_EQ(p.rfind("ref:", 0), std::string::npos) << p;
  EXPECT_LT(k.conv_workspace_bytes(s, ConvScheme::m, ConvPass::forward),
            k.conv_workspace_bytes(s, ConvScheme::p, ConvPass::forward))
      << "m: " << m << ", p: " << p;
}

TEST(Conv2dKernel, RejectsInvalidShapes) {
  CpuKernels k;
  ConvShape s = conv_shape(1, 6, 8, 8, 8, 3, 3);
  s.groups = 4;  // 6 channels do not split into 4 groups
  EXPECT_THROW(k.conv_workspace_bytes(s, ConvScheme::p, ConvPass::forward), std::invalid_argument);
  s = conv_shape(1, 4, 2, 2, 4, 3, 3);  // kernel larger than the unpadded input
  EXPECT_THROW(k.conv_workspace_bytes(s, ConvScheme::m, ConvPass::forward), std::invalid_argument);
  s = conv_shape(1, 4, 8, 8, 4, 3, 3);
  s.bias = true;
  std::vector<float> x(256), w(144), y(144);
  auto ws = workspace_for(k, s, ConvScheme::p, ConvPass::forward);
  EXPECT_THROW(k.conv_forward(s, ConvScheme::p, x.data(), w.data(), nullptr, y.data(), ws.data()),
               std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
