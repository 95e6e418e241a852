// SGD with momentum and L2 weight decay in PyTorch's form:
//   g = dw + weight_decay * w
//   v = momentum * v + g
//   w = w - lr * v
// (no dampening, no Nesterov). The first step therefore sets v = g, exactly
// like PyTorch's lazily created momentum buffer, provided the caller zeroes
// the velocity before training. A skipped step (fp16's overflow, `skip`
// set) leaves both as they are.
#include <cstdint>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/parallel_loops.h"

namespace tidepool {

void CpuKernels::sgd_update(std::int64_t count, float lr, float momentum, float weight_decay,
                            float* w, const float* dw, float* velocity, const float* skip) {
  if (skip && *skip != 0.0f) return;
  // The three arrays are distinct parameter buffers; saying so lets GCC
  // vectorise without runtime overlap checks.
  float* __restrict wr = w;
  const float* __restrict g = dw;
  float* __restrict v = velocity;
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) {
    const float grad = g[i] + weight_decay * wr[i];
    const float vel = momentum * v[i] + grad;
    v[i] = vel;
    wr[i] -= lr * vel;
  }
}

}  // namespace tidepool
