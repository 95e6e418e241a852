// Max and average pooling, plain NCHW, with kernels of our own.
//
// Why not cuDNN here: cudnnPoolingBackward needs the forward output y (and
// x) for both kinds, but a Pool2d layer keeps neither y (backward_reads_output
// is false) nor, for average pooling, x. Keeping y alive for every pooling
// layer would cost 4 bytes per output element of device memory — the
// resource this trainer exists to save. Instead, as on the cpu device, max
// pooling saves the position of each window's maximum: one byte per output
// element while a window has at most 256 taps (an int32 beyond that), and
// average pooling saves nothing.
//
// Both backward passes gather: each input element sums the gradients of the
// windows that cover it, in a fixed order, so there are no atomics and the
// result repeats bit for bit. Average pooling divides by the full window,
// padding included (PyTorch's count_include_pad=True); with the output size
// rounded down a window never reaches past the padded input, so that is
// always kh * kw. Ties in max pooling go to the first maximum in row-major
// window order. 16-bit activations (s.dtype) are widened as they are read
// and rounded once as they are written; a max-pool output is one of its
// inputs, exactly.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/gpu_queries.h"
#include "engine/device/cuda/cuda_util.h"
#include "engine/device/cuda/storage.cuh"

namespace tidepool {
namespace {

using namespace cuda;

// The geometry every kernel needs, by value (a kernel argument).
struct Geometry {
  std::int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw;
};

Geometry geometry(const PoolShape& s) {
  return {s.h, s.w, s.out_h(), s.out_w(), s.kh, s.kw, s.stride_h, s.stride_w, s.pad_h, s.pad_w};
}

// ---------------------------------------------------------------- kernels

template <class Index>
__global__ void max_forward_kernel(const void* __restrict__ x, DType t, void* __restrict__ y,
                                   Index* __restrict__ argmax, std::int64_t planes, Geometry g) {
  const std::int64_t total = planes * g.oh * g.ow;
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t ox = o % g.ow;
    const std::int64_t oy = (o / g.ow) % g.oh;
    const std::int64_t plane = o / (g.ow * g.oh);
    const std::int64_t in = plane * g.h * g.w;
    const std::int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
    float best = 0.0f;
    std::int64_t best_tap = -1;
    for (std::int64_t i = 0; i < g.kh; ++i) {
      const std::int64_t iy = y0 + i;
      if (iy < 0 || iy >= g.h) continue;
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t ix = x0 + j;
        if (ix < 0 || ix >= g.w) continue;
        const float v = load(x, in + iy * g.w + ix, t);
        // Strictly greater: the first maximum wins a tie. A NaN wins once
        // and then stays (nothing compares greater), so NaN propagates.
        if (best_tap < 0 || v > best || (v != v && best == best)) {
          best = v;
          best_tap = i * g.kw + j;
        }
      }
    }
    store(y, o, t, best);
    if (argmax) argmax[o] = static_cast<Index>(best_tap);
  }
}

// The output windows (rows or columns) that contain input position `p`.
__device__ inline void covering(std::int64_t p, std::int64_t k, std::int64_t stride,
                                std::int64_t pad, std::int64_t out, std::int64_t& first,
                                std::int64_t& last) {
  const std::int64_t low = p + pad - k + 1;  // window start <= p + pad - k + 1 .. p + pad
  first = low <= 0 ? 0 : (low + stride - 1) / stride;
  last = (p + pad) / stride;
  if (last > out - 1) last = out - 1;
}

template <class Index>
__global__ void max_backward_kernel(const void* __restrict__ dy, DType t, const Index* __restrict__ argmax,
                                    void* __restrict__ dx, std::int64_t planes, Geometry g) {
  const std::int64_t total = planes * g.h * g.w;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t ix = e % g.w;
    const std::int64_t iy = (e / g.w) % g.h;
    const std::int64_t plane = e / (g.w * g.h);
    std::int64_t oy0, oy1, ox0, ox1;
    covering(iy, g.kh, g.sh, g.ph, g.oh, oy0, oy1);
    covering(ix, g.kw, g.sw, g.pw, g.ow, ox0, ox1);
    float sum = 0.0f;
    for (std::int64_t oy = oy0; oy <= oy1; ++oy) {
      for (std::int64_t ox = ox0; ox <= ox1; ++ox) {
        const std::int64_t o = (plane * g.oh + oy) * g.ow + ox;
        const std::int64_t tap = static_cast<std::int64_t>(argmax[o]);
        if (oy * g.sh - g.ph + tap / g.kw == iy && ox * g.sw - g.pw + tap % g.kw == ix)
          sum += load(dy, o, t);
      }
    }
    store(dx, e, t, sum);
  }
}

__global__ void avg_forward_kernel(const void* __restrict__ x, DType t, void* __restrict__ y,
                                   std::int64_t planes, Geometry g, float inv_area) {
  const std::int64_t total = planes * g.oh * g.ow;
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t ox = o % g.ow;
    const std::int64_t oy = (o / g.ow) % g.oh;
    const std::int64_t plane = o / (g.ow * g.oh);
    const std::int64_t in = plane * g.h * g.w;
    const std::int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
    float sum = 0.0f;
    for (std::int64_t i = 0; i < g.kh; ++i) {
      const std::int64_t iy = y0 + i;
      if (iy < 0 || iy >= g.h) continue;
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t ix = x0 + j;
        if (ix >= 0 && ix < g.w) sum += load(x, in + iy * g.w + ix, t);
      }
    }
    store(y, o, t, sum * inv_area);
  }
}

__global__ void avg_backward_kernel(const void* __restrict__ dy, DType t, void* __restrict__ dx,
                                    std::int64_t planes, Geometry g, float inv_area) {
  const std::int64_t total = planes * g.h * g.w;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t ix = e % g.w;
    const std::int64_t iy = (e / g.w) % g.h;
    const std::int64_t plane = e / (g.w * g.h);
    std::int64_t oy0, oy1, ox0, ox1;
    covering(iy, g.kh, g.sh, g.ph, g.oh, oy0, oy1);
    covering(ix, g.kw, g.sw, g.pw, g.ow, ox0, ox1);
    float sum = 0.0f;
    for (std::int64_t oy = oy0; oy <= oy1; ++oy)
      for (std::int64_t ox = ox0; ox <= ox1; ++ox) sum += load(dy, (plane * g.oh + oy) * g.ow + ox, t);
    store(dx, e, t, sum * inv_area);
  }
}

// ---------------------------------------------------------------- helpers

// One byte names a tap of a window of up to 256; larger windows need more.
bool byte_indices(const PoolShape& s) { return gpu_pool_byte_indices(s); }

std::int64_t outputs(const PoolShape& s) { return s.n * s.c * s.out_h() * s.out_w(); }

}  // namespace

std::size_t CudaKernels::pool_saved_bytes(const PoolShape& s) const { return gpu_pool_saved_bytes(s); }

void CudaKernels::pool_forward(const PoolShape& s, const void* x, void* y, void* saved) {
  validate(s);
  const Geometry g = geometry(s);
  const std::int64_t planes = s.n * s.c;
  const unsigned blocks = grid_for(outputs(s));
  cudaStream_t stream = ctx_->stream;
  if (s.kind == PoolKind::avg) {
    const float inv_area = 1.0f / static_cast<float>(s.kh * s.kw);
    avg_forward_kernel<<<blocks, kThreads, 0, stream>>>(x, s.dtype, y, planes, g, inv_area);
    check_launch("avg_forward_kernel");
    return;
  }
  // No place for the argmax means nobody will run backward (evaluation).
  if (byte_indices(s)) {
    max_forward_kernel<std::uint8_t>
        <<<blocks, kThreads, 0, stream>>>(x, s.dtype, y, static_cast<std::uint8_t*>(saved), planes, g);
  } else {
    max_forward_kernel<std::int32_t>
        <<<blocks, kThreads, 0, stream>>>(x, s.dtype, y, static_cast<std::int32_t*>(saved), planes, g);
  }
  check_launch("max_forward_kernel");
}

void CudaKernels::pool_backward(const PoolShape& s, const void* x, const void* dy,
                                const void* saved, void* dx) {
  (void)x;  // the argmax (max) or nothing at all (average) is all backward needs
  validate(s);
  const Geometry g = geometry(s);
  const std::int64_t planes = s.n * s.c;
  const unsigned blocks = grid_for(planes * s.h * s.w);
  cudaStream_t stream = ctx_->stream;
  if (s.kind == PoolKind::avg) {
    const float inv_area = 1.0f / static_cast<float>(s.kh * s.kw);
    avg_backward_kernel<<<blocks, kThreads, 0, stream>>>(dy, s.dtype, dx, planes, g, inv_area);
    check_launch("avg_backward_kernel");
    return;
  }
  if (saved == nullptr) {
    throw std::invalid_argument("pool: max-pooling backward needs what forward saved");
  }
  if (byte_indices(s)) {
    max_backward_kernel<std::uint8_t><<<blocks, kThreads, 0, stream>>>(
        dy, s.dtype, static_cast<const std::uint8_t*>(saved), dx, planes, g);
  } else {
    max_backward_kernel<std::int32_t><<<blocks, kThreads, 0, stream>>>(
        dy, s.dtype, static_cast<const std::int32_t*>(saved), dx, planes, g);
  }
  check_launch("max_backward_kernel");
}

}  // namespace tidepool
