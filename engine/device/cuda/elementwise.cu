// Elementwise kernels: residual add (with a fused ReLU too), copy (flatten and other views that
// need their own buffer) and gradient accumulation for fan-out tensors.
//
// Each result is one IEEE single-precision add, as on the cpu device, so
// both devices give the same bits. Outputs may alias inputs (y == a for an
// in-place add), so there is no __restrict__ here.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"
#include "engine/device/cuda/storage.cuh"

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

// 16-bit storage: load and store (storage.cuh).

__global__ void convert_kernel(std::int64_t count, DType from, const void* x, DType to, void* y, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    store(y, i, to, __fmul_rn(load(x, i, from), scale));
  }
}

// The residual add of 16-bit activations: summed in f32, rounded once.
__global__ void add_16bit_kernel(std::int64_t count, DType t, const void* a, const void* b, void* y) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    store(y, i, t, __fadd_rn(load(a, i, t), load(b, i, t)));
  }
}

// The residual add with its ReLU fused (--fuse relu), any float type:
// summed in f32, max(v, 0) with NaN kept as on the cpu device, rounded once.
__global__ void add_relu_kernel(std::int64_t count, DType t, const void* a, const void* b, void* y) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = __fadd_rn(load(a, i, t), load(b, i, t));
    store(y, i, t, 0.0f > v ? 0.0f : v);
  }
}

__global__ void accumulate_16bit_kernel(std::int64_t count, DType t, const void* x, void* acc) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    store(acc, i, t, __fadd_rn(load(acc, i, t), load(x, i, t)));
  }
}

void check_float_type(DType t, const char* op) {
  if (t == DType::i32) throw std::invalid_argument(std::string(op) + ": i32 is not a floating-point type");
}

}  // namespace

// ---------------------------------------------------------------- launchers

void CudaKernels::convert(std::int64_t count, DType from, const void* x, DType to, void* y, float scale) {
  if (count <= 0) return;
  check_float_type(from, "convert");
  check_float_type(to, "convert");
  convert_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, from, x, to, y, scale);
  check_launch("convert_kernel");
}

void CudaKernels::accumulate_16bit(std::int64_t count, DType type, const void* x, void* acc) {
  if (count <= 0) return;
  if (type != DType::bf16 && type != DType::f16)
    throw std::invalid_argument("accumulate_16bit: " + std::string(to_string(type)) + " is not a 16-bit type");
  accumulate_16bit_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, type, x, acc);
  check_launch("accumulate_16bit_kernel");
}

void CudaKernels::add_forward(std::int64_t count, DType type, const void* a, const void* b, void* y) {
  if (count <= 0) return;
  if (is_16bit(type)) {
    add_16bit_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, type, a, b, y);
    check_launch("add_16bit_kernel");
    return;
  }
  require_f32(type, "add_forward");
  add_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, static_cast<const float*>(a),
                                                             static_cast<const float*>(b), static_cast<float*>(y));
  check_launch("add_kernel");
}

void CudaKernels::add_relu_forward(std::int64_t count, DType type, const void* a, const void* b, void* y) {
  if (count <= 0) return;
  if (!is_16bit(type)) require_f32(type, "add_relu_forward");
  add_relu_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(count, type, a, b, y);
  check_launch("add_relu_kernel");
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
