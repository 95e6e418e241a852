// Device-side loads and stores of activations in any of the three float
// types (--precision): a load widens to f32 exactly; a store rounds to
// nearest even, and a value beyond f16's range becomes ±inf (which is how
// fp16's loss scaling finds that its scale is too large), as the cpu
// device's conversions do (cpu/convert.cpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace tidepool::cuda {

__device__ inline float load(const void* p, std::int64_t i, DType t) {
  switch (t) {
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::f16: return __half2float(static_cast<const __half*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

__device__ inline void store(void* p, std::int64_t i, DType t, float v) {
  switch (t) {
    case DType::bf16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    case DType::f16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

}  // namespace tidepool::cuda
