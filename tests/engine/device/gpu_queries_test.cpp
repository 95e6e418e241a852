// A GPU's answers without the GPU (engine/device/gpu_queries.h): the model
// of cuDNN's workspaces, the measured figures that replace it, and the
// 16-bit types the GPU takes or refuses. Nothing here asks the host's
// kernels, so every figure is the same on every host.
#include <gtest/gtest.h>

#include "engine/device/gpu_queries.h"

namespace tidepool {
namespace {

ConvShape conv3x3() {
  return {.n = 2, .c = 16, .h = 8, .w = 8, .k = 32, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
}

GpuKernelFacts v100_like() { return {"NVIDIA Tesla V100", true, false, {}}; }

TEST(GpuQueries, TheMemorySchemeTakesNoWorkspace) {
  const GpuQueries q(v100_like());
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
    EXPECT_EQ(q.conv_workspace_bytes(conv3x3(), ConvScheme::m, pass), 0u);
    ConvShape half = conv3x3();
    half.dtype = DType::f16;
    EXPECT_EQ(q.conv_workspace_bytes(half, ConvScheme::m, pass), 32u * 16 * 9 * 2)
        << "a 16-bit pass keeps only its weights' f16 copy (9216 bytes, a multiple of 256)";
  }
}

TEST(GpuQueries, ThePerformanceSchemeKeepsWinogradsTransformedTiles) {
  const GpuQueries q(v100_like());
  // 8x8 outputs in 4x4 tiles: 2 * 2 * 2 = 8 tiles of 6x6 values, for the
  // 16 input channels, the 32 output channels, and the 32 * 16 filters.
  const std::size_t values = 36 * (8 * 16 + 8 * 32 + 32 * 16);
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
    EXPECT_EQ(q.conv_workspace_bytes(conv3x3(), ConvScheme::p, pass), values * 4);
  ConvShape half = conv3x3();
  half.dtype = DType::f16;
  EXPECT_EQ(q.conv_workspace_bytes(half, ConvScheme::p, ConvPass::forward), 9216 + values * 2)
      << "the weights' copy, then the tiles in f16";
  ConvShape five = conv3x3();
  five.r = five.s = 5;
  five.pad_h = five.pad_w = 2;  // 8x8 outputs in 2x2 tiles: 2 * 4 * 4 = 32 tiles
  EXPECT_EQ(q.conv_workspace_bytes(five, ConvScheme::p, ConvPass::forward), 36u * (32 * 16 + 32 * 32 + 32 * 16) * 4);
}

// No p algorithm takes more than the cuda device's cap: past it, cuDNN's
// next fastest (a GEMM) runs, as the cuda device picks.
TEST(GpuQueries, AWinogradPastTheCapGivesWayToAGemm) {
  const GpuQueries q(v100_like());
  ConvShape vgg_conv1_2{.n = 64, .c = 64, .h = 224, .w = 224, .k = 64, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  EXPECT_EQ(q.conv_workspace_bytes(vgg_conv1_2, ConvScheme::p, ConvPass::forward), 64u * 9 * 4);
  vgg_conv1_2.n = 4;  // 4 * 56 * 56 tiles: 231 MiB of them
  EXPECT_EQ(q.conv_workspace_bytes(vgg_conv1_2, ConvScheme::p, ConvPass::forward),
            36u * (4 * 56 * 56 * 64 * 2 + 64 * 64) * 4);
  EXPECT_LE(q.conv_workspace_bytes(vgg_conv1_2, ConvScheme::p, ConvPass::forward), kMaxConvWorkspace);
}

TEST(GpuQueries, OtherShapesTakeAGemmsIndexOrNothing) {
  const GpuQueries q(v100_like());
  ConvShape pointwise = conv3x3();
  pointwise.r = pointwise.s = 1;
  pointwise.pad_h = pointwise.pad_w = 0;
  EXPECT_EQ(q.conv_workspace_bytes(pointwise, ConvScheme::p, ConvPass::forward), 0u);
  const ConvShape stem{.n = 4, .c = 3, .h = 224, .w = 224, .k = 64, .r = 7, .s = 7, .stride_h = 2, .stride_w = 2,
                       .pad_h = 3, .pad_w = 3};
  EXPECT_EQ(q.conv_workspace_bytes(stem, ConvScheme::p, ConvPass::forward), 3u * 7 * 7 * 4);
  ConvShape strided = conv3x3();
  strided.stride_h = strided.stride_w = 2;
  EXPECT_EQ(q.conv_workspace_bytes(strided, ConvScheme::p, ConvPass::backward_weights), 16u * 9 * 4);
  ConvShape depthwise = conv3x3();
  depthwise.k = depthwise.groups = 16;
  EXPECT_EQ(q.conv_workspace_bytes(depthwise, ConvScheme::p, ConvPass::forward), 9u * 4);
}

TEST(GpuQueries, MeasuredWorkspacesReplaceTheModelForTheirShapesOnly) {
  GpuKernelFacts facts = v100_like();
  facts.workspaces.push_back({conv3x3(), ConvScheme::p, ConvPass::backward_data, 12345});
  ConvShape half = conv3x3();
  half.dtype = DType::f16;
  facts.workspaces.push_back({half, ConvScheme::m, ConvPass::forward, 512});
  const GpuQueries q(facts);
  EXPECT_EQ(q.conv_workspace_bytes(conv3x3(), ConvScheme::p, ConvPass::backward_data), 12345u);
  EXPECT_EQ(q.conv_workspace_bytes(half, ConvScheme::m, ConvPass::forward), 9216u + 512)
      << "cuDNN's figure after the weights' copy, as the cuda device places them";
  EXPECT_EQ(q.conv_workspace_bytes(conv3x3(), ConvScheme::p, ConvPass::forward),
            modelled_cudnn_workspace(conv3x3(), ConvScheme::p))
      << "another pass of the same shape: the model";
  ConvShape blocked = conv3x3();
  blocked.channel_block = 8;
  EXPECT_EQ(q.conv_workspace_bytes(blocked, ConvScheme::p, ConvPass::backward_data), 12345u)
      << "the cuda device is NCHW whatever layout the caller names";
}

TEST(GpuQueries, SixteenBitTypesAreTheGpusOwn) {
  const GpuQueries volta(v100_like());
  EXPECT_TRUE(volta.takes_16bit(DType::f16));
  EXPECT_FALSE(volta.takes_16bit(DType::bf16));
  EXPECT_EQ(volta.refuses_16bit(DType::f16), "");
  EXPECT_EQ(volta.refuses_16bit(DType::f32), "");
  const std::string why = volta.refuses_16bit(DType::bf16);
  EXPECT_NE(why.find("NVIDIA Tesla V100 has no bf16"), std::string::npos) << why;
  EXPECT_NE(why.find("--precision fp16"), std::string::npos) << why;
  const GpuQueries ampere(GpuKernelFacts{"NVIDIA A100", true, true, {}});
  EXPECT_TRUE(ampere.takes_16bit(DType::bf16));
  EXPECT_EQ(ampere.refuses_16bit(DType::bf16), "");
}

TEST(GpuQueries, LayoutPoolingAndMasksFollowTheCudaDevicesOwnKernels) {
  const GpuQueries q(v100_like());
  EXPECT_EQ(q.channel_block(), 0);
  const PoolShape pool{.kind = PoolKind::max, .n = 2, .c = 8, .h = 6, .w = 6};
  EXPECT_EQ(q.pool_saved_bytes(pool), 2u * 8 * 3 * 3) << "a byte per output: the argmax in its 2x2 window";
  PoolShape big = pool;
  big.kh = big.kw = big.stride_h = big.stride_w = 17;
  big.h = big.w = 34;
  EXPECT_EQ(q.pool_saved_bytes(big), 2u * 8 * 2 * 2 * 4) << "a 289-value window needs an int32";
  PoolShape avg = pool;
  avg.kind = PoolKind::avg;
  EXPECT_EQ(q.pool_saved_bytes(avg), 0u);
  BatchNormShape bn{.n = 2, .c = 3, .h = 5, .w = 7};
  EXPECT_EQ(q.batchnorm_relu_mask_bytes(bn), 0u);
  bn.relu = true;
  EXPECT_EQ(q.batchnorm_relu_mask_bytes(bn), 4u * ((2 * 3 * 5 * 7 + 31) / 32)) << "a bit a value, in words";
}

}  // namespace
}  // namespace tidepool
