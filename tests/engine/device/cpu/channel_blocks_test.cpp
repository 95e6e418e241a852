// The channel-blocked activation layout (kernels.h channel_blocked) on the
// cpu device: every op that takes it computes what it computes on NCHW
// data, only stored in the blocked order; the conversions are the index map
// the layout names; the primitive caches keep the two layouts apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "engine/layers/dropout.h"
#include "engine/layers/flatten.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/kernel_cache.h"
#include "testing/kernel_testing.h"
#include "testing/op_cases.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::conv_cases;
using testing::ConvCase;
using testing::nan_filled;
using testing::pool_shape;
using testing::random_floats;
using testing::to_double;

std::size_t count(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return static_cast<std::size_t>(n * c * h * w);
}

// x in the layout channel_blocked(c, block) gives a [n, c, h, w] tensor.
std::vector<float> stored(CpuKernels& k, const std::vector<float>& nchw, std::int64_t n, std::int64_t c,
                          std::int64_t hw, std::int64_t block) {
  if (!channel_blocked(c, block)) return nchw;
  std::vector<float> out(nchw.size());
  k.block_channels({n, c, hw, block}, nchw.data(), out.data());
  return out;
}

std::vector<float> as_nchw(CpuKernels& k, const std::vector<float>& x, std::int64_t n, std::int64_t c,
                           std::int64_t hw, std::int64_t block) {
  if (!channel_blocked(c, block)) return x;
  std::vector<float> out(x.size());
  k.unblock_channels({n, c, hw, block}, x.data(), out.data());
  return out;
}

TEST(ChannelBlocks, TheProcessorsBlockIsOneOneDnnUses) {
  CpuKernels k;
  const std::int64_t b = k.channel_block();
  EXPECT_TRUE(b == 0 || b == 8 || b == 16) << b;
}

TEST(ChannelBlocks, ConversionsFollowTheIndexMap) {
  CpuKernels k;
  const ChannelBlocks s{2, 16, 3 * 5, 8};
  std::vector<float> nchw(count(2, 16, 3, 5));
  for (std::size_t i = 0; i < nchw.size(); ++i) nchw[i] = static_cast<float>(i);
  std::vector<float> blocked = nan_filled(nchw.size());
  k.block_channels(s, nchw.data(), blocked.data());
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t p = 0; p < s.hw; ++p) {
        const std::int64_t at = ((n * (s.c / 8) + c / 8) * s.hw + p) * 8 + c % 8;
        ASSERT_EQ(blocked[static_cast<std::size_t>(at)], nchw[static_cast<std::size_t>((n * s.c + c) * s.hw + p)]);
      }
  std::vector<float> back = nan_filled(nchw.size());
  k.unblock_channels(s, blocked.data(), back.data());
  EXPECT_EQ(back, nchw);
}

TEST(ChannelBlocks, ConversionsRefuseChannelsTheBlockDoesNotDivide) {
  CpuKernels k;
  std::vector<float> x(2 * 12 * 4), y(x.size());
  EXPECT_THROW(k.block_channels({2, 12, 4, 8}, x.data(), y.data()), std::invalid_argument);
  EXPECT_THROW(k.unblock_channels({2, 12, 4, 0}, x.data(), y.data()), std::invalid_argument);
}

// Every conv case and pass computes the same in both layouts. Not always
// bit for bit: the scheme picks its implementation for the layouts it is
// given (m: the smallest workspace, which on NCHW data can be an NCHW GEMM).
TEST(ChannelBlocks, ConvolutionMatchesNchw) {
  CpuKernels k;
  const std::int64_t block = k.channel_block();
  if (block == 0) GTEST_SKIP() << "oneDNN keeps NCHW on this processor";
  for (const ConvCase& c : conv_cases()) {
    for (ConvScheme scheme : testing::kBothSchemes) {
      ConvShape plain = c.shape;
      ConvShape blocked = c.shape;
      blocked.channel_block = block;
      const std::int64_t n = plain.n, hw_in = plain.h * plain.w, hw_out = plain.out_h() * plain.out_w();
      const auto x = random_floats(count(n, plain.c, plain.h, plain.w), 1);
      const auto w = random_floats(static_cast<std::size_t>(plain.weight_numel()), 2);
      const auto b = random_floats(static_cast<std::size_t>(plain.k), 3);
      const auto dy = random_floats(static_cast<std::size_t>(n * plain.k * hw_out), 4);
      std::size_t ws = 0;
      for (const ConvShape& shape : {plain, blocked})
        for (ConvPass pass : testing::kAllPasses) ws = std::max(ws, k.conv_workspace_bytes(shape, scheme, pass));
      std::vector<std::byte> workspace(ws + 64);
      void* wsp = workspace.data() + (64 - reinterpret_cast<std::uintptr_t>(workspace.data()) % 64) % 64;

      auto y0 = nan_filled(dy.size()), y1 = nan_filled(dy.size());
      k.conv_forward(plain, scheme, x.data(), w.data(), plain.bias ? b.data() : nullptr, y0.data(), wsp);
      const auto xb = stored(k, x, n, plain.c, hw_in, block);
      k.conv_forward(blocked, scheme, xb.data(), w.data(), plain.bias ? b.data() : nullptr, y1.data(), wsp);
      EXPECT_TRUE(all_close(as_nchw(k, y1, n, plain.k, hw_out, block), to_double(y0), 1e-5, 1e-5))
          << c.name << " forward";

      auto dx0 = nan_filled(x.size()), dx1 = nan_filled(x.size());
      k.conv_backward_data(plain, scheme, dy.data(), w.data(), dx0.data(), wsp);
      const auto dyb = stored(k, dy, n, plain.k, hw_out, block);
      k.conv_backward_data(blocked, scheme, dyb.data(), w.data(), dx1.data(), wsp);
      EXPECT_TRUE(all_close(as_nchw(k, dx1, n, plain.c, hw_in, block), to_double(dx0), 1e-5, 1e-5))
          << c.name << " backward data";

      auto dw0 = nan_filled(w.size()), dw1 = nan_filled(w.size());
      auto db0 = nan_filled(b.size()), db1 = nan_filled(b.size());
      k.conv_backward_weights(plain, scheme, x.data(), dy.data(), dw0.data(), plain.bias ? db0.data() : nullptr, wsp);
      k.conv_backward_weights(blocked, scheme, xb.data(), dyb.data(), dw1.data(), plain.bias ? db1.data() : nullptr,
                              wsp);
      EXPECT_TRUE(all_close(dw1, to_double(dw0), 1e-5, 1e-5)) << c.name << " backward weights";
      if (plain.bias) EXPECT_TRUE(all_close(db1, to_double(db0), 1e-5, 1e-5)) << c.name << " bias";
    }
  }
}

// Batch norm sums in another order in the blocked layout: equal within
// float rounding.
TEST(ChannelBlocks, BatchNormMatchesNchw) {
  CpuKernels k;
  const std::int64_t block = k.channel_block();
  if (block == 0) GTEST_SKIP() << "oneDNN keeps NCHW on this processor";
  BatchNormShape plain{4, 16, 5, 6};
  BatchNormShape blocked = plain;
  blocked.channel_block = block;
  const std::int64_t hw = plain.h * plain.w;
  const std::size_t c = static_cast<std::size_t>(plain.c);
  const auto x = random_floats(count(4, 16, 5, 6), 7);
  const auto dy = random_floats(x.size(), 8);
  const auto gamma = random_floats(c, 9, 0.5f, 1.5f), beta = random_floats(c, 10);
  std::vector<float> y0(x.size()), y1(x.size()), m0(c), m1(c), v0(c), v1(c);
  std::vector<float> rm0(c, 0.0f), rm1(c, 0.0f), rv0(c, 1.0f), rv1(c, 1.0f);
  k.batchnorm_forward_train(plain, x.data(), gamma.data(), beta.data(), y0.data(), m0.data(), v0.data(), rm0.data(),
                            rv0.data(), nullptr);
  const auto xb = stored(k, x, plain.n, plain.c, hw, block);
  k.batchnorm_forward_train(blocked, xb.data(), gamma.data(), beta.data(), y1.data(), m1.data(), v1.data(), rm1.data(),
                            rv1.data(), nullptr);
  EXPECT_TRUE(all_close(as_nchw(k, y1, plain.n, plain.c, hw, block), to_double(y0), 1e-5, 1e-5));
  EXPECT_TRUE(all_close(m1, to_double(m0), 1e-5, 1e-6));
  EXPECT_TRUE(all_close(v1, to_double(v0), 1e-5, 1e-6));

  std::vector<float> dx0(x.size()), dx1(x.size()), dg0(c), dg1(c), db0(c), db1(c);
  k.batchnorm_backward(plain, x.data(), dy.data(), gamma.data(), m0.data(), v0.data(), dx0.data(), dg0.data(),
                       db0.data(), nullptr);
  const auto dyb = stored(k, dy, plain.n, plain.c, hw, block);
  k.batchnorm_backward(blocked, xb.data(), dyb.data(), gamma.data(), m1.data(), v1.data(), dx1.data(), dg1.data(),
                       db1.data(), nullptr);
  EXPECT_TRUE(all_close(as_nchw(k, dx1, plain.n, plain.c, hw, block), to_double(dx0), 1e-4, 1e-5));
  EXPECT_TRUE(all_close(dg1, to_double(dg0), 1e-4, 1e-5));
  EXPECT_TRUE(all_close(db1, to_double(db0), 1e-4, 1e-5));
}

TEST(ChannelBlocks, PoolingMatchesNchw) {
  CpuKernels k;
  const std::int64_t block = k.channel_block();
  if (block == 0) GTEST_SKIP() << "oneDNN keeps NCHW on this processor";
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    PoolShape plain = pool_shape(kind, 2, 16, 9, 9, 3, 2, 1);
    PoolShape blocked = plain;
    blocked.channel_block = block;
    ASSERT_EQ(k.pool_saved_bytes(blocked), k.pool_saved_bytes(plain));
    const std::int64_t hw_in = plain.h * plain.w, hw_out = plain.out_h() * plain.out_w();
    const auto x = testing::distinct_floats(count(2, 16, 9, 9), 11);
    const auto dy = random_floats(static_cast<std::size_t>(2 * 16 * hw_out), 12);
    std::vector<std::byte> s0(k.pool_saved_bytes(plain) + 1), s1(s0.size());
    std::vector<float> y0(dy.size()), y1(dy.size()), dx0(x.size()), dx1(x.size());
    k.pool_forward(plain, x.data(), y0.data(), s0.data());
    const auto xb = stored(k, x, 2, 16, hw_in, block);
    k.pool_forward(blocked, xb.data(), y1.data(), s1.data());
    EXPECT_TRUE(all_close(as_nchw(k, y1, 2, 16, hw_out, block), to_double(y0), 1e-6, 1e-7));
    k.pool_backward(plain, x.data(), dy.data(), s0.data(), dx0.data());
    const auto dyb = stored(k, dy, 2, 16, hw_out, block);
    k.pool_backward(blocked, xb.data(), dyb.data(), s1.data(), dx1.data());
    EXPECT_TRUE(all_close(as_nchw(k, dx1, 2, 16, hw_in, block), to_double(dx0), 1e-6, 1e-7));
  }
}

// The mask is the NCHW tensor's, element for element: the same units drop
// whatever the layout (and on the cuda device, which keeps NCHW).
TEST(ChannelBlocks, BlockedDropoutDrawsTheNchwMask) {
  CpuKernels k;
  const ChannelBlocks s{3, 16, 7, 8};
  const std::size_t n = count(3, 16, 7, 1);
  const auto x = random_floats(n, 13);
  std::vector<float> y0(n), m0(n), y1(n), m1(n);
  k.dropout_forward(static_cast<std::int64_t>(n), 0.3f, 42, x.data(), y0.data(), m0.data());
  const auto xb = stored(k, x, 3, 16, 7, 8);
  k.dropout_forward_blocked(s, 0.3f, 42, xb.data(), y1.data(), m1.data());
  EXPECT_EQ(as_nchw(k, m1, 3, 16, 7, 8), m0);
  EXPECT_EQ(as_nchw(k, y1, 3, 16, 7, 8), y0);
}

// The Dropout and Flatten layers see a blocked input through LayerArgs.
TEST(ChannelBlocks, FlattenGivesNchwRowsOfABlockedInput) {
  CpuKernels k;
  const Shape in{2, 16, 3, 3};
  const std::size_t n = static_cast<std::size_t>(in.numel());
  const auto x = random_floats(n, 14);
  const auto xb = stored(k, x, 2, 16, 9, 8);
  Flatten flatten("flatten");
  LayerArgs a;
  a.channel_block = 8;
  a.input_shapes = {in};
  a.output_shape = Shape{2, 16 * 9};
  a.inputs = {xb.data()};
  std::vector<float> y = nan_filled(n);
  a.output = y.data();
  flatten.forward(k, a);
  EXPECT_EQ(y, x);

  std::vector<float> dx = nan_filled(n);
  a.output_grad = x.data();
  a.input_grads = {dx.data()};
  flatten.backward(k, a);
  EXPECT_EQ(dx, xb);
}

TEST(ChannelBlocks, DropoutLayerUsesTheNchwMaskOnABlockedInput) {
  CpuKernels k;
  const Shape in{2, 8, 4, 4};
  const std::size_t n = static_cast<std::size_t>(in.numel());
  const auto x = random_floats(n, 15);
  Dropout drop("drop", 0.5f);
  auto run = [&](std::int64_t block, const std::vector<float>& input) {
    LayerArgs a;
    a.channel_block = block;
    a.input_shapes = {in};
    a.output_shape = in;
    a.inputs = {input.data()};
    std::vector<float> y(n), mask(n);
    a.output = y.data();
    a.saved = {mask.data()};
    a.seed = 99;
    drop.forward(k, a);
    return y;
  };
  EXPECT_EQ(as_nchw(k, run(8, stored(k, x, 2, 8, 16, 8)), 2, 8, 16, 8), run(0, x));
}

// A cache key covers the layout: the same shape in two layouts is two
// primitives.
TEST(ChannelBlocks, ConvCacheKeyCoversTheLayout) {
  ConvShape s = testing::conv_shape(2, 16, 8, 8, 16, 3, 3, 1, 1);
  ConvShape b = s;
  b.channel_block = 8;
  EXPECT_NE(conv_key(1, s, ConvScheme::p, ConvPass::forward), conv_key(1, b, ConvScheme::p, ConvPass::forward));
}

}  // namespace
}  // namespace tidepool
