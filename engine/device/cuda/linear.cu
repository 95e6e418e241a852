// Fully connected layers on cuBLAS: y[n, out] = x[n, in] * W[out, in]^T + b[out].
//
// cuBLAS is column-major; a row-major [r, c] matrix is the column-major
// [c, r] one with the same bytes. So, writing Xc, Wc, Yc for the arena's
// x, W, y read column-major (Xc is in x n, Wc is in x out, Yc is out x n):
//   forward          Yc  = Wc^T * Xc          gemm(T, N, m=out, n=n,   k=in)
//   backward data    dXc = Wc * dYc           gemm(N, N, m=in,  n=n,   k=out)
//   backward weights dWc = Xc * dYc^T         gemm(N, T, m=in,  n=out, k=n)
// The bias is added by a small kernel after the GEMM, and its gradient (the
// column sums of dy) is our fixed-order channel sum, so it repeats bit for
// bit. All GEMMs overwrite (beta = 0), as backward kernels must.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

// ---------------------------------------------------------------- kernels

__global__ void add_bias_kernel(float* __restrict__ y, const float* __restrict__ b,
                                std::int64_t rows, std::int64_t cols) {
  const std::int64_t total = rows * cols;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    y[i] += b[i % cols];
  }
}

// ---------------------------------------------------------------- helpers

struct Dims {
  int n, in, out;
};

Dims dims(const LinearShape& s) {
  validate(s);
  return {to_int(s.n, "linear n"), to_int(s.in, "linear in"), to_int(s.out, "linear out")};
}

constexpr float kOne = 1.0f, kZero = 0.0f;

}  // namespace

void CudaKernels::linear_forward(const LinearShape& s, const float* x, const float* w,
                                 const float* b, float* y) {
  const Dims d = dims(s);
  TP_CALL(cublasSgemm, ctx_->cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, d.out, d.n, d.in, &kOne, w,
          d.in, x, d.in, &kZero, y, d.out);
  if (b != nullptr) {
    add_bias_kernel<<<grid_for(s.n * s.out), kThreads, 0, ctx_->stream>>>(y, b, s.n, s.out);
    check_launch("add_bias_kernel");
  }
}

void CudaKernels::linear_backward_data(const LinearShape& s, const float* dy, const float* w,
                                       float* dx) {
  const Dims d = dims(s);
  TP_CALL(cublasSgemm, ctx_->cublas.get(), CUBLAS_OP_N, CUBLAS_OP_N, d.in, d.n, d.out, &kOne, w,
          d.in, dy, d.out, &kZero, dx, d.in);
}

void CudaKernels::linear_backward_weights(const LinearShape& s, const float* x, const float* dy,
                                          float* dw, float* db) {
  const Dims d = dims(s);
  TP_CALL(cublasSgemm, ctx_->cublas.get(), CUBLAS_OP_N, CUBLAS_OP_T, d.in, d.out, d.n, &kOne, x,
          d.in, dy, d.out, &kZero, dw, d.in);
  if (db != nullptr) launch_channel_sum(ctx_->stream, dy, DType::f32, db, s.n, s.out, 1);
}

}  // namespace tidepool
