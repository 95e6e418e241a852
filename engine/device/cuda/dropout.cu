// Dropout with the cpu device's counter-based mask, bit for bit: element i's
// fate depends on (seed, i) only, never on the launch geometry, so a GPU
// run draws exactly the mask a cpu run draws.
//
// The recipe (see engine/device/cpu/dropout.cpp, which every device follows):
//   h = splitmix64(seed ^ i)            (i = the element's index, 0-based)
//   u = (h >> 40) * 2^-24               (top 24 bits: a float in [0, 1))
//   keep = u >= p
//   mask = keep ? 1 / (1 - p) : 0,  y = x * mask
// The scale is computed on the host exactly as the cpu device computes it,
// and each product is a single rounded multiply, so y matches too.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

// ---------------------------------------------------------------- kernels

// splitmix64's full generator step: add the golden-ratio gamma, two
// xor-shift-multiply rounds, a final xor-shift.
__device__ inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void dropout_forward_kernel(std::int64_t count, float p, float scale, std::uint64_t seed,
                                       const float* __restrict__ x, float* __restrict__ y,
                                       float* __restrict__ mask) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    // 24 bits fit a float's mantissa: the conversion and the scaling by a
    // power of two are exact, so the comparison means what it does on the cpu.
    const float u =
        static_cast<float>(splitmix64(seed ^ static_cast<std::uint64_t>(i)) >> 40) * 0x1.0p-24f;
    const float m = u >= p ? scale : 0.0f;
    mask[i] = m;
    y[i] = __fmul_rn(x[i], m);
  }
}

__global__ void dropout_backward_kernel(std::int64_t count, const float* __restrict__ mask,
                                        const float* __restrict__ dy, float* __restrict__ dx) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = __fmul_rn(dy[i], mask[i]);
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void CudaKernels::dropout_forward(std::int64_t count, float p, std::uint64_t seed, const float* x,
                                  float* y, float* mask) {
  if (!(p >= 0.0f && p <= 1.0f)) {
    throw std::invalid_argument("dropout: p must be in [0, 1], got " + std::to_string(p));
  }
  if (count <= 0) return;
  // At p = 1 nothing is kept (u < 1 always), so the scale is never used;
  // 0 keeps the arithmetic finite. Same expression as the cpu device.
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  dropout_forward_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, p, scale, seed, x,
                                                                         y, mask);
  check_launch("dropout_forward_kernel");
}

void CudaKernels::dropout_backward(std::int64_t count, const float* mask, const float* dy,
                                   float* dx) {
  if (count <= 0) return;
  dropout_backward_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, mask, dy, dx);
  check_launch("dropout_backward_kernel");
}

}  // namespace tidepool
