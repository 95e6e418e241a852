#include "engine/device/gpu_queries.h"

#include <algorithm>

namespace tidepool {

namespace {

// The model of cuDNN's workspaces, for the shapes a profile did not measure.
// It follows the cuda device's own rule for choosing (engine/device/cuda/
// conv2d.cpp: deterministic algorithms only):
//  - m takes the least workspace. Every shape has a deterministic
//    algorithm without one: implicit GEMM forward
//    (CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), backward data ALGO_1 and
//    backward filter ALGO_1, which the cuDNN API reference describes as
//    "does not need any memory workspace" and deterministic. So m: 0.
//  - p takes the fastest, which for the shapes of the zoo is, by class:
//    * 3x3 and 5x5, stride 1, no dilation, not grouped: Winograd
//      non-fused (CUDNN_*_ALGO_WINOGRAD_NONFUSED, deterministic in all
//      three passes), which keeps the transformed input, filter and output
//      in its workspace: F(4x4, 3x3) and F(2x2, 5x5) both work on 6x6
//      tiles (Lavin & Gray, "Fast Algorithms for Convolutional Neural
//      Networks", 2016), so each of the n * ceil(oh/m) * ceil(ow/m) tiles
//      takes 36 values per input and per output channel, and the filter
//      36 per (k, c) pair, in the activations' type. This is the
//      performance-for-memory trade vDNN's `p` makes (Rhu et al. 2016,
//      Fig. 6: its fastest algorithms needed hundreds of MiB more for
//      VGG-16).
//    * 1x1 convolutions: a plain GEMM (implicit precomputed GEMM), whose
//      index buffer is negligible: 0.
//    * everything else (7x7 and 11x11 stems, strided 3x3, grouped and
//      depthwise), and a Winograd whose workspace would pass the cuda
//      device's cap (kMaxConvWorkspace: VGG's first layers at ImageNet
//      size and large batches): implicit precomputed GEMM, whose workspace
//      holds one 32-bit index per (c, r, s) filter tap: c/groups * r * s * 4
//      bytes.
// A profile measured on the GPU (`tidepool profile --device cuda`)
// replaces these figures with cuDNN's own for the shapes it saw.
constexpr std::int64_t kWinogradTile = 6;

bool winograd(const ConvShape& s) {
  return s.groups == 1 && s.r == s.s && (s.r == 3 || s.r == 5) && s.stride_h == 1 && s.stride_w == 1 &&
         s.dil_h == 1 && s.dil_w == 1;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::size_t modelled_cudnn_workspace(const ConvShape& s, ConvScheme scheme) {
  validate(s);
  if (scheme == ConvScheme::m) return 0;
  const std::size_t value = dtype_bytes(is_16bit(s.dtype) ? s.dtype : DType::f32);
  if (winograd(s)) {
    const std::int64_t m = kWinogradTile - s.r + 1;  // outputs per tile side: 4 for 3x3, 2 for 5x5
    const std::int64_t tiles = s.n * ceil_div(s.out_h(), m) * ceil_div(s.out_w(), m);
    const std::int64_t per_tile = kWinogradTile * kWinogradTile;
    // Every pass transforms one activation operand per side and the filter
    // (forward: x, w, y; backward data: dy, w, dx; backward filter: x, dy, dw).
    const std::int64_t values = per_tile * (tiles * s.c + tiles * s.k + s.k * s.c);
    const std::size_t bytes = static_cast<std::size_t>(values) * value;
    if (bytes <= kMaxConvWorkspace) return bytes;
  }
  if (s.r == 1 && s.s == 1) return 0;
  return static_cast<std::size_t>((s.c / s.groups) * s.r * s.s) * sizeof(std::int32_t);
}

bool operator==(const MeasuredWorkspace& a, const MeasuredWorkspace& b) {
  return a.shape == b.shape && a.scheme == b.scheme && a.pass == b.pass && a.bytes == b.bytes;
}

bool operator==(const GpuKernelFacts& a, const GpuKernelFacts& b) {
  return a.gpu == b.gpu && a.f16 == b.f16 && a.bf16 == b.bf16 && a.workspaces == b.workspaces;
}

bool gpu_pool_byte_indices(const PoolShape& s) { return s.kh * s.kw <= 256; }

std::size_t gpu_pool_saved_bytes(const PoolShape& s) {
  validate(s);
  if (s.kind != PoolKind::max) return 0;
  const std::int64_t outputs = s.n * s.c * s.out_h() * s.out_w();
  return static_cast<std::size_t>(outputs) * (gpu_pool_byte_indices(s) ? 1 : sizeof(std::int32_t));
}

std::size_t gpu_relu_mask_bytes(const BatchNormShape& s) {
  if (!s.relu) return 0;
  const std::int64_t count = s.n * s.c * s.h * s.w;
  return static_cast<std::size_t>((count + 31) / 32) * sizeof(std::uint32_t);
}

std::string gpu_refuses_bf16(const std::string& gpu) {
  return "the " + gpu + " has no bf16 arithmetic (cuDNN computes bf16 from compute capability 8.0: A100, H100 "
         "and later): train it with --precision fp16 or fp32";
}

bool GpuQueries::takes_16bit(DType type) const {
  return (type == DType::f16 && facts_.f16) || (type == DType::bf16 && facts_.bf16);
}

std::string GpuQueries::refuses_16bit(DType type) const {
  if (type == DType::bf16 && !facts_.bf16) return gpu_refuses_bf16(facts_.gpu);
  if (type == DType::f16 && !facts_.f16)
    return "the " + facts_.gpu + " has no f16 arithmetic: train it with --precision fp32";
  return "";
}

std::size_t GpuQueries::conv_workspace_bytes(const ConvShape& s, ConvScheme scheme, ConvPass pass) const {
  ConvShape key = s;
  key.channel_block = 0;  // the cuda device keeps every tensor NCHW
  const auto measured = std::find_if(facts_.workspaces.begin(), facts_.workspaces.end(), [&](const MeasuredWorkspace& m) {
    return m.scheme == scheme && m.pass == pass && m.shape == key;
  });
  const std::size_t cudnn =
      measured != facts_.workspaces.end() ? measured->bytes : modelled_cudnn_workspace(s, scheme);
  return conv_weights_copy_bytes(s) + cudnn;
}

std::size_t GpuQueries::batchnorm_relu_mask_bytes(const BatchNormShape& s) const { return gpu_relu_mask_bytes(s); }

std::size_t GpuQueries::pool_saved_bytes(const PoolShape& s) const { return gpu_pool_saved_bytes(s); }

}  // namespace tidepool
