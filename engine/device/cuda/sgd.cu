// SGD with momentum and L2 weight decay in PyTorch's form:
//   g = dw + weight_decay * w
//   v = momentum * v + g
//   w = w - lr * v
// (no dampening, no Nesterov). Every step is a separately rounded multiply
// or add (__fmul_rn, __fadd_rn, __fsub_rn) because nvcc would otherwise fuse
// them into FMAs, which round once instead of twice: with them the update
// is the cpu device's bit for bit. A skipped step (fp16's overflow, `skip`
// set in device memory) leaves w and the velocity as they are.
#include <cstdint>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

// ---------------------------------------------------------------- kernels

__global__ void sgd_kernel(std::int64_t count, float lr, float momentum, float weight_decay,
                           float* __restrict__ w, const float* __restrict__ dw,
                           float* __restrict__ velocity, const float* __restrict__ skip) {
  if (skip && *skip != 0.0f) return;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float weight = w[i];
    const float grad = __fadd_rn(dw[i], __fmul_rn(weight_decay, weight));
    const float vel = __fadd_rn(__fmul_rn(momentum, velocity[i]), grad);
    velocity[i] = vel;
    w[i] = __fsub_rn(weight, __fmul_rn(lr, vel));
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void CudaKernels::sgd_update(std::int64_t count, float lr, float momentum, float weight_decay,
                             float* w, const float* dw, float* velocity, const float* skip) {
  if (count <= 0) return;
  sgd_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, lr, momentum, weight_decay, w,
                                                             dw, velocity, skip);
  check_launch("sgd_kernel");
}

}  // namespace tidepool
