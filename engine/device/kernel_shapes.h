// The shapes a kernel is called with, and what they imply on their own
// (output sizes, FLOPs, a 16-bit convolution's weight copy): shared by the
// kernels that run (kernels.h) and the answers a device gives before
// anything runs (kernel_queries.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/conv_scheme.h"
#include "engine/core/dtype.h"

namespace tidepool {

// Activation layout. With a channel block b > 0, a 4-D activation (or its
// gradient) whose channel count b divides is stored [n][c/b][h][w][b]
// (oneDNN's nChw8c for b = 8): the layout the cpu device's convolutions,
// batch norms and poolings compute in, so nothing is reordered between
// layers. It takes the same bytes as NCHW (b divides c: no padding), so no
// memory figure depends on it. Every other tensor (the images, 2-D
// tensors, channel counts b does not divide) is dense NCHW. b = 0: every
// tensor is NCHW. A schedule takes b from its device's table
// (KernelQueries::channel_block()) and each layer passes it in its shapes.
inline bool channel_blocked(std::int64_t channels, std::int64_t block) {
  return block > 0 && channels % block == 0;
}

// A 4-D tensor seen by the layout conversions and blocked dropout.
struct ChannelBlocks {
  std::int64_t n = 1, c = 1, hw = 1;  // hw: height * width
  std::int64_t block = 0;
};
enum class ConvPass : std::uint8_t { forward, backward_data, backward_weights };

struct ConvShape {
  std::int64_t n = 1, c = 1, h = 1, w = 1;  // input
  std::int64_t k = 1, r = 1, s = 1;          // output channels, kernel height, width
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dil_h = 1, dil_w = 1;  // 1 = no dilation (PyTorch's convention)
  std::int64_t groups = 1;            // groups == c == k is a depthwise convolution
  bool bias = false;
  std::int64_t channel_block = 0;  // x (c channels) and y (k channels) as channel_blocked() says
  // What x, y, dx and dy are stored in: f32, or bf16/f16 on a table that
  // takes 16-bit activations. Weights, bias and their gradients are f32
  // (the master copy) whatever it says.
  DType dtype = DType::f32;

  std::int64_t out_h() const { return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1; }
  std::int64_t out_w() const { return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1; }
  // Weights are [k, c / groups, r, s].
  std::int64_t weight_numel() const { return k * (c / groups) * r * s; }
  double flops() const { return 2.0 * n * k * out_h() * out_w() * (c / groups) * r * s; }
};
// Every field equal (kernel_shapes.cpp; not defaulted: nvcc compiles the
// cuda kernels, which see this header, as C++17).
bool operator==(const ConvShape& a, const ConvShape& b);

struct BatchNormShape {
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  float eps = 1e-5f;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch
  std::int64_t channel_block = 0;  // x and y as channel_blocked(c, channel_block) says
  // x, y, dx and dy, as ConvShape::dtype; gamma, beta and the statistics
  // are f32. The --sync-bn kernels (*_sums) take f32 only.
  DType dtype = DType::f32;
  // A ReLU fused into the whole passes (--fuse relu): forward writes
  // y = max(bn(x), 0) and a mask of where y > 0, and backward
  // takes the gradient of that y and passes none outside the mask. The
  // --sync-bn kernels have no such form (engine/core/fusion.h leaves batch norms unfused under --sync-bn).
  bool relu = false;
};

// The doubles the --sync-bn kernels sum over the ranks for `channels`
// channels: two per channel and the count (Kernels::batchnorm_sums).
constexpr std::int64_t batchnorm_sums_count(std::int64_t channels) { return 2 * channels + 1; }

enum class PoolKind : std::uint8_t { max, avg };

struct PoolShape {
  PoolKind kind = PoolKind::max;
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  std::int64_t kh = 2, kw = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  std::int64_t channel_block = 0;  // x and y as channel_blocked(c, channel_block) says
  DType dtype = DType::f32;  // x, y, dx, dy, as ConvShape::dtype
  // Average pooling divides by the full window, padding included
  // (PyTorch's count_include_pad=True).
  std::int64_t out_h() const { return (h + 2 * pad_h - kh) / stride_h + 1; }
  std::int64_t out_w() const { return (w + 2 * pad_w - kw) / stride_w + 1; }
};

struct LinearShape {
  std::int64_t n = 1, in = 1, out = 1;  // y[n, out] = x[n, in] * W[out, in]^T + b[out]
};

// Throw std::invalid_argument naming the op and the shape when a shape
// cannot be computed (engine/device/kernel_shapes.cpp); every backend checks its
// inputs with these before it runs an op.
void validate(const ConvShape& s);
void validate(const BatchNormShape& s);
void validate(const PoolShape& s);
void validate(const LinearShape& s);
// Throws std::logic_error naming the op when `type` is not f32: what a
// table whose takes_16bit() is false says to a 16-bit call (a planner bug:
// such steps get f32 copies).
void require_f32(DType type, const char* op);
// True for the two 16-bit activation types, and for those and f32.
constexpr bool is_16bit(DType t) { return t == DType::bf16 || t == DType::f16; }
constexpr bool is_float(DType t) { return t == DType::f32 || is_16bit(t); }
// A 16-bit copy of a convolution's f32 weights, as a table that takes
// 16-bit activations keeps at the front of each pass's workspace (the
// cuda device: cuDNN wants the weights in the activations' type); 0 in f32.
// Rounded up to 256 bytes so that what follows it stays aligned.
std::size_t conv_weights_copy_bytes(const ConvShape& s);

}  // namespace tidepool
