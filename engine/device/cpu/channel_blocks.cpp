// The channel-blocked activation layout (kernels.h channel_blocked): which
// block this processor's convolutions want, and the conversions between it
// and NCHW that a layer needs where its meaning is tied to NCHW order
// (flatten's rows).
//
// Why blocked activations at all: oneDNN's direct convolutions on x86 run
// in nChw8c (AVX2) or nChw16c (AVX-512) only, so with NCHW activations
// every convolution pass reorders its inputs into workspace copies and its
// output back, and batch norm and pooling fall back to their slower NCHW
// implementations. Keeping activations in the block between layers removes
// all of that; only the weights (OIHW in the arena, for every device) are
// still reordered per pass.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/onednn_util.h"

namespace tidepool {
namespace onednn {

namespace {

// oneDNN's first implementation for a typical layer (32 -> 32 channels,
// 3x3, on 8x8 images) in `type` with every layout `any`: what its
// heuristics pick for such layers on this processor. Empty when it has
// none. 32 channels divide by every block it uses.
dnnl::convolution_forward::primitive_desc typical_conv(Context& ctx, memory::data_type type, algorithm alg) {
  const memory::desc act({1, 32, 8, 8}, type, Tag::any);
  const memory::desc wei({32, 32, 3, 3}, type, Tag::any);
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(prop_kind::forward_training, alg, act, wei, act, {1, 1}, {1, 1}, {1, 1}),
      user_scratchpad(), ctx.engine, /*allow_empty=*/true);
}

}  // namespace

std::int64_t conv_channel_block(Context& ctx) {
  // The layout the fastest convolution picks for its input.
  const auto pd = typical_conv(ctx, kF32, algorithm::convolution_auto);
  if (!pd) return 0;
  const memory::desc chosen = pd.src_desc();
  for (std::int64_t block : {8, 16})
    if (chosen == f32_desc({1, 32, 8, 8}, activation_tag(32, block))) return block;
  return 0;  // NCHW or something else: keep every tensor NCHW
}

bool native_bf16(Context& ctx) {
  // The BF16 instructions (vdpbf16ps), within the ISA oneDNN is allowed:
  // on AVX-512 without them oneDNN emulates bf16 in its jit kernels, which
  // is no faster than the f32 copies and never measured here.
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  if (isa != dnnl::cpu_isa::avx512_core_bf16 && isa != dnnl::cpu_isa::avx512_core_amx) return false;
  // And a jit kernel for the typical layer in bf16, not the reference one.
  const auto pd = typical_conv(ctx, memory::data_type::bf16, algorithm::convolution_direct);
  return pd && std::string(pd.impl_info_str()).rfind("ref:", 0) != 0;
}

}  // namespace onednn

namespace {

void check(const ChannelBlocks& b, const char* op) {
  if (!channel_blocked(b.c, b.block) || b.n <= 0 || b.hw <= 0)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(b.c) + " channels in blocks of " +
                                std::to_string(b.block) + " (n=" + std::to_string(b.n) +
                                ", h*w=" + std::to_string(b.hw) + ")");
}

// Element (n, c, hw) sits at ((n * c/b + c/b') * hw + hw) * b + c%b in the
// blocked order and at (n * c + c) * hw + hw in NCHW. Copies only, so the
// bits are the input's.
template <bool kToNchw>
void convert_layout(const ChannelBlocks& s, const float* __restrict x, float* __restrict y) {
  const std::int64_t blocks = s.c / s.block;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t cb = 0; cb < blocks; ++cb) {
      const std::int64_t blocked = (n * blocks + cb) * s.hw * s.block;
      const std::int64_t nchw = (n * s.c + cb * s.block) * s.hw;
      for (std::int64_t p = 0; p < s.hw; ++p)
        for (std::int64_t j = 0; j < s.block; ++j) {
          if constexpr (kToNchw)
            y[nchw + j * s.hw + p] = x[blocked + p * s.block + j];
          else
            y[blocked + p * s.block + j] = x[nchw + j * s.hw + p];
        }
    }
}

}  // namespace

void CpuKernels::unblock_channels(const ChannelBlocks& s, const float* x, float* y) {
  check(s, "unblock_channels");
  convert_layout<true>(s, x, y);
}

void CpuKernels::block_channels(const ChannelBlocks& s, const float* x, float* y) {
  check(s, "block_channels");
  convert_layout<false>(s, x, y);
}

}  // namespace tidepool
