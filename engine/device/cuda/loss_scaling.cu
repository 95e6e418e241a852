// fp16's loss scaling (engine/run/loss_scaler.h): the flag's fill and the
// parameter gradients' unscaling with its non-finite check, as on the cpu
// device (the product is one correctly rounded multiply by a power of two).
#include <cstdint>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

// ---------------------------------------------------------------- kernels

__global__ void fill_kernel(std::int64_t count, float value, float* y) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    y[i] = value;
  }
}

// Every thread that finds a NaN or an infinity writes the same 1: the
// writes race harmlessly, and no thread ever writes anything else.
__global__ void unscale_check_kernel(std::int64_t count, float* g, float inv_scale, float* overflow) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = g[i];
    if (!isfinite(v)) *overflow = 1.0f;
    g[i] = __fmul_rn(v, inv_scale);
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void CudaKernels::fill(std::int64_t count, float value, float* y) {
  if (count <= 0) return;
  fill_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, value, y);
  check_launch("fill_kernel");
}

void CudaKernels::unscale_check(std::int64_t count, float* g, float inv_scale, float* overflow) {
  if (count <= 0) return;
  unscale_check_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, g, inv_scale, overflow);
  check_launch("unscale_check_kernel");
}

}  // namespace tidepool
