// ReLU on 16-bit activations (--precision bf16|fp16, CudaKernels::takes_16bit).
// The f32 path is cuDNN's (relu.cpp); a 16-bit value widens to f32 and
// rounds back exactly, and max(x, 0) of a 16-bit value is one, so these
// give the bits a 16-bit ReLU must, whichever type cuDNN supports.
#include <cstdint>

#include "engine/device/cuda/cuda_util.h"
#include "engine/device/cuda/storage.cuh"

namespace tidepool::cuda {
namespace {

__global__ void relu_forward_16bit_kernel(std::int64_t count, DType t, const void* x, void* y) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = load(x, i, t);
    store(y, i, t, v > 0.0f || v != v ? v : 0.0f);  // NaN propagates, as in cuDNN's and oneDNN's
  }
}

// Reads y, not x (relu.cpp says why): y > 0 exactly where x > 0.
__global__ void relu_backward_16bit_kernel(std::int64_t count, DType t, const void* y, const void* dy, void* dx) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    store(dx, i, t, load(y, i, t) > 0.0f ? load(dy, i, t) : 0.0f);
  }
}

}  // namespace

void launch_relu_forward_16bit(cudaStream_t stream, std::int64_t count, DType type, const void* x, void* y) {
  if (count <= 0) return;
  relu_forward_16bit_kernel<<<grid_for(count), kThreads, 0, stream>>>(count, type, x, y);
  check_launch("relu_forward_16bit_kernel");
}

void launch_relu_backward_16bit(cudaStream_t stream, std::int64_t count, DType type, const void* y,
                                const void* dy, void* dx) {
  if (count <= 0) return;
  relu_backward_16bit_kernel<<<grid_for(count), kThreads, 0, stream>>>(count, type, y, dy, dx);
  check_launch("relu_backward_16bit_kernel");
}

}  // namespace tidepool::cuda
