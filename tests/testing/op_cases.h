// The op shapes the kernel tests run, written once for both device suites:
// the cpu device is checked against the double-precision references
// (tests/reference/), the cuda device against the cpu device, on the same
// cases. Each suite adds the cases only its backend needs (a oneDNN GEMM
// path, a cuDNN-sized layer) and keeps its own tolerances and assertions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/device/kernels.h"

namespace tidepool::testing {

// A shape with a name for the test's trace.
template <class Shape>
struct OpCase {
  std::string name;
  Shape shape;
};

// --- Convolution -----------------------------------------------------------

using ConvCase = OpCase<ConvShape>;

inline constexpr ConvScheme kBothSchemes[] = {ConvScheme::m, ConvScheme::p};
inline constexpr ConvPass kAllPasses[] = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights};

inline const char* scheme_name(ConvScheme s) { return s == ConvScheme::m ? "m" : "p"; }

// n x c x h x w input, k output channels, an r x s kernel; the same stride
// and padding both ways. The rest (dilation, groups, bias) is set on the
// result.
inline ConvShape conv_shape(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
                            std::int64_t r, std::int64_t s, std::int64_t stride = 1, std::int64_t pad = 0) {
  ConvShape shape;
  shape.n = n, shape.c = c, shape.h = h, shape.w = w, shape.k = k, shape.r = r, shape.s = s;
  shape.stride_h = shape.stride_w = stride;
  shape.pad_h = shape.pad_w = pad;
  return shape;
}

// Small enough for the reference loops, wide enough (16-32 channels) that
// the libraries' vectorised kernels run and not only their fallbacks; every
// feature of ConvShape at least once.
inline std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> out;
  out.push_back({"3x3_pad1", conv_shape(2, 16, 9, 9, 32, 3, 3, 1, 1)});
  out.push_back({"3x3_stride2_pad1", conv_shape(2, 16, 10, 9, 16, 3, 3, 2, 1)});
  // 8 rows, 2x2 stride 2 unpadded: exact. 9 rows: the last input row is
  // never read, so oneDNN sees negative end padding.
  out.push_back({"2x2_stride2_cut_row", conv_shape(2, 8, 9, 8, 16, 2, 2, 2, 0)});
  out.push_back({"1x1", conv_shape(2, 16, 8, 8, 32, 1, 1)});
  out.push_back({"1x1_stride2_downsample", conv_shape(2, 16, 8, 8, 32, 1, 1, 2, 0)});
  ConvShape s = conv_shape(2, 8, 11, 10, 16, 3, 3, 1, 2);
  s.dil_h = s.dil_w = 2;
  out.push_back({"3x3_dilation2", s});
  s = conv_shape(2, 16, 8, 8, 16, 3, 3, 1, 1);
  s.groups = 2;
  out.push_back({"3x3_groups2", s});
  s = conv_shape(2, 16, 9, 9, 16, 3, 3, 1, 1);
  s.groups = 16;
  out.push_back({"depthwise_3x3", s});
  s = conv_shape(2, 16, 9, 9, 16, 3, 3, 2, 1);
  s.groups = 16;
  s.bias = true;
  out.push_back({"depthwise_3x3_stride2_bias", s});
  s = conv_shape(2, 16, 8, 8, 32, 3, 3, 1, 1);
  s.bias = true;
  out.push_back({"3x3_bias", s});
  s = conv_shape(2, 3, 12, 12, 16, 3, 3, 1, 1);
  s.bias = true;
  out.push_back({"rgb_stem_bias", s});
  s = conv_shape(1, 4, 7, 5, 6, 3, 1);
  s.pad_h = 1;
  s.stride_w = 2;
  out.push_back({"3x1_asymmetric", s});
  return out;
}

// --- Pooling ---------------------------------------------------------------

using PoolCase = OpCase<PoolShape>;

// A k x k window with the same stride and padding both ways.
inline PoolShape pool_shape(PoolKind kind, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                            std::int64_t k, std::int64_t stride, std::int64_t pad = 0) {
  PoolShape s;
  s.kind = kind, s.n = n, s.c = c, s.h = h, s.w = w;
  s.kh = s.kw = k, s.stride_h = s.stride_w = stride, s.pad_h = s.pad_w = pad;
  return s;
}

// --- Batch normalisation and fully connected layers --------------------------
// (Both shapes are aggregates: BatchNormShape{n, c, h, w}, LinearShape{n, in, out}.)

inline std::string describe(const BatchNormShape& s) {
  return "n=" + std::to_string(s.n) + " c=" + std::to_string(s.c) + " h=" + std::to_string(s.h) +
         " w=" + std::to_string(s.w);
}

inline std::string describe(const LinearShape& s) {
  return "n=" + std::to_string(s.n) + " in=" + std::to_string(s.in) + " out=" + std::to_string(s.out);
}

}  // namespace tidepool::testing
