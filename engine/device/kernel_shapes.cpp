// The shape checks every backend runs before an op: one definition, so the
// cpu and cuda devices refuse the same shapes with the same words.
#include <stdexcept>
#include <string>

#include "engine/device/kernels.h"

namespace tidepool {

void validate(const ConvShape& s) {
  const bool ok = s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0 && s.k > 0 && s.r > 0 && s.s > 0 &&
                  s.stride_h > 0 && s.stride_w > 0 && s.pad_h >= 0 && s.pad_w >= 0 && s.dil_h > 0 &&
                  s.dil_w > 0 && s.groups > 0 && s.c % s.groups == 0 && s.k % s.groups == 0 &&
                  s.out_h() > 0 && s.out_w() > 0 && s.channel_block >= 0 &&
                  is_float(s.dtype);
  if (!ok) {
    throw std::invalid_argument("conv: invalid shape n=" + std::to_string(s.n) + " c=" + std::to_string(s.c) +
                                " h=" + std::to_string(s.h) + " w=" + std::to_string(s.w) +
                                " k=" + std::to_string(s.k) + " r=" + std::to_string(s.r) +
                                " s=" + std::to_string(s.s) + " groups=" + std::to_string(s.groups));
  }
}

void validate(const BatchNormShape& s) {
  if (s.n <= 0 || s.c <= 0 || s.h <= 0 || s.w <= 0 || !(s.eps > 0.0f) || s.channel_block < 0 ||
      !is_float(s.dtype)) {
    throw std::invalid_argument("batchnorm: invalid shape n=" + std::to_string(s.n) + " c=" + std::to_string(s.c) +
                                " h=" + std::to_string(s.h) + " w=" + std::to_string(s.w));
  }
}

void validate(const PoolShape& s) {
  const bool ok = s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0 && s.kh > 0 && s.kw > 0 && s.stride_h > 0 &&
                  s.stride_w > 0 && s.pad_h >= 0 && s.pad_w >= 0 && s.pad_h < s.kh && s.pad_w < s.kw &&
                  s.out_h() > 0 && s.out_w() > 0 && s.channel_block >= 0 &&
                  is_float(s.dtype);
  if (!ok) {
    throw std::invalid_argument("pool: invalid shape n=" + std::to_string(s.n) + " c=" + std::to_string(s.c) +
                                " h=" + std::to_string(s.h) + " w=" + std::to_string(s.w) +
                                " kernel=" + std::to_string(s.kh) + "x" + std::to_string(s.kw) +
                                " pad=" + std::to_string(s.pad_h) + "x" + std::to_string(s.pad_w));
  }
}

void validate(const LinearShape& s) {
  if (s.n <= 0 || s.in <= 0 || s.out <= 0) {
    throw std::invalid_argument("linear: invalid shape n=" + std::to_string(s.n) + " in=" + std::to_string(s.in) +
                                " out=" + std::to_string(s.out));
  }
}

bool operator==(const ConvShape& a, const ConvShape& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w && a.k == b.k && a.r == b.r && a.s == b.s &&
         a.stride_h == b.stride_h && a.stride_w == b.stride_w && a.pad_h == b.pad_h && a.pad_w == b.pad_w &&
         a.dil_h == b.dil_h && a.dil_w == b.dil_w && a.groups == b.groups && a.bias == b.bias &&
         a.channel_block == b.channel_block && a.dtype == b.dtype;
}

std::size_t conv_weights_copy_bytes(const ConvShape& s) {
  if (!is_16bit(s.dtype)) return 0;
  constexpr std::size_t kAlign = 256;
  const std::size_t bytes = static_cast<std::size_t>(s.weight_numel()) * dtype_bytes(s.dtype);
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

void require_f32(DType type, const char* op) {
  if (type != DType::f32)
    throw std::logic_error(std::string(op) + ": this kernel table computes on f32 only, and was given " +
                           std::string(to_string(type)) + " (a 16-bit step needs f32 copies: engine/step_calls/f32_views.h)");
}

// A table that keeps every tensor NCHW (channel_block() == 0) is never
// asked to convert; one that is asked anyway has a planner bug behind it.
namespace {
[[noreturn]] void no_blocked_layout(const char* op) {
  throw std::logic_error(std::string(op) + ": this kernel table keeps every tensor NCHW (channel_block() is 0)");
}
}  // namespace

void Kernels::unblock_channels(const ChannelBlocks&, const float*, float*) { no_blocked_layout("unblock_channels"); }
void Kernels::block_channels(const ChannelBlocks&, const float*, float*) { no_blocked_layout("block_channels"); }
void Kernels::dropout_forward_blocked(const ChannelBlocks&, float, std::uint64_t, const float*, float*, float*) {
  no_blocked_layout("dropout_forward_blocked");
}

}  // namespace tidepool
