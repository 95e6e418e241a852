// Elementwise kernels: residual add, copy (flatten and other views that
// need their own buffer) and gradient accumulation for fan-out tensors.
//
// Each result is one IEEE single-precision add, as on the cpu device, so
// both devices give the same bits. Outputs may alias inputs (y == a for an
// in-place add), so there is no __restrict__ here.
#include <cstdint>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

// ---------------------------------------------------------------- kernels

__global__ void add_kernel(std::int64_t count, const float* a, const float* b, float* y) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    y[i] = __fadd_rn(a[i], b[i]);
  }
}

__global__ void accumulate_kernel(std::int64_t count, const float* x, float* acc) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    acc[i] = __fadd_rn(acc[i], x[i]);
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void CudaKernels::add_forward(std::int64_t count, const float* a, const float* b, float* y) {
  if (count <= 0) return;
  add_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, a, b, y);
  check_launch("add_kernel");
}

void CudaKernels::copy(std::int64_t count, const float* x, float* y) {
  // An in-place flatten asks to copy a buffer onto itself: nothing to do.
  if (count <= 0 || x == y) return;
  TP_CALL(cudaMemcpyAsync, y, x, static_cast<std::size_t>(count) * sizeof(float),
          cudaMemcpyDeviceToDevice, ctx_->stream);
}

void CudaKernels::accumulate(std::int64_t count, const float* x, float* acc) {
  if (count <= 0) return;
  accumulate_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, x, acc);
  check_launch("accumulate_kernel");
}

}  // namespace tidepool
