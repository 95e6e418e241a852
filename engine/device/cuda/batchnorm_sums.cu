// Batch normalisation over every rank's batch (--sync-bn) on the cuda
// device: the per-channel sums each rank contributes, and the passes that
// finish with the sums of all of them (kernels.h, batchnorm_sums). The same
// arithmetic as the cpu device's (cpu/batchnorm_sums.cpp), NCHW only (this
// table's channel_block() is 0).
//
// cuDNN's training calls compute their statistics and backward reductions
// inside, over the one batch they see, so the sums are our own kernels: one
// block per channel, partial sums in double combined by a fixed tree, as
// reductions.cu does for bias gradients (no atomics: the same bits every
// run). The normalisation itself is cuDNN's inference call, given the
// summed statistics.
//
// The sums travel like the gradient buckets (CudaDevice::all_reduce: NCCL,
// or pinned host memory); the GPU tests compare these kernels with the cpu
// device's where a GPU is present (none has run them yet).
//
// The same kernels run batch norm's whole passes on 16-bit activations
// (--precision bf16|fp16) and those with a fused ReLU (--fuse relu), in
// every type (batchnorm_own_*): the sums of this batch alone, in the table's
// per-channel scratch, then the normalisation or dx, each value widened to
// f32 as it is read and rounded once as it is written. cuDNN's batch-norm
// calls are not documented to take bf16 data, and fuse an activation only
// in NHWC layouts, so neither depends on them. The fused ReLU's mask is a
// bit a value, written a warp's 32 values at a time (__ballot_sync), and
// backward reads it in place of y.
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

constexpr int kSumThreads = 256;

// ---------------------------------------------------------------- kernels

// What channel_sums adds up per element (functors: this build does not
// enable nvcc's extended device lambdas).
// Values of type t (f32, or 16-bit activations), widened as they are read.
struct Value {
  const void* v;
  DType t;
  __device__ double operator()(std::int64_t i) const { return static_cast<double>(load(v, i, t)); }
};
struct Square {
  const void* v;
  DType t;
  __device__ double operator()(std::int64_t i) const {
    const float f = load(v, i, t);
    return static_cast<double>(f) * f;
  }
};
// The gradient that reaches batch norm's output: dy, or with a fused ReLU
// (mask not null) none where the mask's bit says the ReLU cut.
__device__ float grad_at(const void* dy, const std::uint32_t* mask, std::int64_t i, DType t) {
  return mask != nullptr && ((mask[i >> 5] >> (i & 31)) & 1u) == 0 ? 0.0f : load(dy, i, t);
}
struct Grad {
  const void* dy;
  const std::uint32_t* mask;
  DType t;
  __device__ double operator()(std::int64_t i) const { return static_cast<double>(grad_at(dy, mask, i, t)); }
};
struct Centred {  // dy · (x - mean)
  const void* dy;
  const std::uint32_t* mask;
  const void* x;
  DType t;
  double mean;
  __device__ double operator()(std::int64_t i) const {
    return static_cast<double>(grad_at(dy, mask, i, t)) * (load(x, i, t) - mean);
  }
};

// Block `ch` sums fa(i) and fb(i) over channel ch's n * hw elements (i is
// the element's index) into sa and sb, with a fixed tree.
template <class Fa, class Fb>
__device__ void channel_sums(std::int64_t n, std::int64_t channels, std::int64_t hw, Fa fa, Fb fb, double* sa,
                             double* sb) {
  const std::int64_t ch = blockIdx.x;
  double a = 0.0, b = 0.0;
  const std::int64_t total = n * hw;
  for (std::int64_t e = threadIdx.x; e < total; e += kSumThreads) {
    const std::int64_t i = e / hw, p = e - i * hw;
    const std::int64_t at = (i * channels + ch) * hw + p;
    a += fa(at);
    b += fb(at);
  }
  __shared__ double pa[kSumThreads], pb[kSumThreads];
  pa[threadIdx.x] = a;
  pb[threadIdx.x] = b;
  __syncthreads();
  for (int stride = kSumThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      pa[threadIdx.x] += pa[threadIdx.x + stride];
      pb[threadIdx.x] += pb[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *sa = pa[0];
    *sb = pb[0];
  }
}

__global__ void forward_sums_kernel(const void* __restrict__ x, DType t, double* __restrict__ sums, std::int64_t n,
                                    std::int64_t channels, std::int64_t hw) {
  const std::int64_t ch = blockIdx.x;
  channel_sums(n, channels, hw, Value{x, t}, Square{x, t}, sums + ch, sums + channels + ch);
  if (ch == 0 && threadIdx.x == 0) sums[2 * channels] = static_cast<double>(n) * static_cast<double>(hw);
}

// Mean and biased variance from the summed sums; the running statistics as
// batchnorm_forward_train's (unbiased over the summed count).
__global__ void statistics_kernel(const double* __restrict__ sums, std::int64_t channels, float momentum,
                                  float* __restrict__ saved_mean, float* __restrict__ saved_var,
                                  float* __restrict__ running_mean, float* __restrict__ running_var) {
  const double count = sums[2 * channels];
  for (std::int64_t ch = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; ch < channels;
       ch += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double mean = sums[ch] / count;
    const float m = static_cast<float>(mean);
    const float v = static_cast<float>(fmax(sums[channels + ch] / count - mean * mean, 0.0));
    saved_mean[ch] = m;
    saved_var[ch] = v;
    if (running_mean != nullptr && running_var != nullptr) {
      const float unbias = count > 1.0 ? static_cast<float>(count / (count - 1.0)) : 1.0f;
      running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * m;
      running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * v * unbias;
    }
  }
}

__global__ void backward_sums_kernel(const void* __restrict__ x, const void* __restrict__ dy,
                                     const std::uint32_t* __restrict__ mask, DType t,
                                     const float* __restrict__ saved_mean, const float* __restrict__ saved_var,
                                     double eps, double* __restrict__ sums, float* __restrict__ dgamma,
                                     float* __restrict__ dbeta, std::int64_t n, std::int64_t channels,
                                     std::int64_t hw) {
  const std::int64_t ch = blockIdx.x;
  const double mean = saved_mean[ch];
  channel_sums(n, channels, hw, Grad{dy, mask, t}, Centred{dy, mask, x, t, mean}, sums + ch, sums + channels + ch);
  if (threadIdx.x == 0) {
    // Σdy·(x - mean) times 1/σ once, as on the cpu device.
    sums[channels + ch] *= 1.0 / sqrt(static_cast<double>(saved_var[ch]) + eps);
    dgamma[ch] = static_cast<float>(sums[channels + ch]);
    dbeta[ch] = static_cast<float>(sums[ch]);
  }
  if (ch == 0 && threadIdx.x == 0) sums[2 * channels] = static_cast<double>(n) * static_cast<double>(hw);
}

// dx = A (dy - mean(dy)) + B (x - mean), A = gamma/σ, B = -A/σ · mean(dy·x̂).
__global__ void dx_kernel(const void* __restrict__ x, const void* __restrict__ dy,
                          const std::uint32_t* __restrict__ mask, DType t,
                          const float* __restrict__ gamma, const float* __restrict__ saved_mean,
                          const float* __restrict__ saved_var, const double* __restrict__ sums, double eps,
                          void* __restrict__ dx, std::int64_t count, std::int64_t channels, std::int64_t hw) {
  const double n = sums[2 * channels];
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t ch = (e / hw) % channels;
    const double invstd = 1.0 / sqrt(static_cast<double>(saved_var[ch]) + eps);
    const double ga = static_cast<double>(gamma[ch]) * invstd;
    const float a = static_cast<float>(ga);
    const float b = static_cast<float>(-ga * invstd * (sums[channels + ch] / n));
    const float mdy = static_cast<float>(sums[ch] / n);
    store(dx, e, t, a * (grad_at(dy, mask, e, t) - mdy) + b * (load(x, e, t) - saved_mean[ch]));
  }
}

// y = (x - mean) · γ/σ + β with the given statistics (the batch's in
// training, the running ones in evaluation), max(y, 0) with NaN kept with
// a fused ReLU: our own passes' (the others take cuDNN's inference call).
// `mask` (a fused ReLU's, in training): bit e says the stored y_e > 0. A
// warp's lanes take 32 consecutive values (kThreads and the stride are
// multiples of 32, so the loop's condition is the same for the whole warp
// and every lane reaches the ballot), and lane 0 writes the warp's word.
__global__ void normalise_kernel(const void* __restrict__ x, DType t, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, const float* __restrict__ mean,
                                 const float* __restrict__ var, double eps, bool relu, void* __restrict__ y,
                                 std::uint32_t* __restrict__ mask, std::int64_t count, std::int64_t channels,
                                 std::int64_t hw) {
  const unsigned lane = threadIdx.x & 31u;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e - lane < count;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    bool passed = false;
    if (e < count) {
      const std::int64_t ch = (e / hw) % channels;
      const float scale =
          static_cast<float>(static_cast<double>(gamma[ch]) / sqrt(static_cast<double>(var[ch]) + eps));
      const float v = (load(x, e, t) - mean[ch]) * scale + beta[ch];
      store(y, e, t, relu && 0.0f > v ? 0.0f : v);
      if (mask != nullptr) passed = load(y, e, t) > 0.0f;  // as stored: a 16-bit y may round a tiny v to 0
    }
    if (mask != nullptr) {
      const unsigned bits = __ballot_sync(0xffffffffu, passed);
      if (lane == 0) mask[e >> 5] = bits;
    }
  }
}

// ---------------------------------------------------------------- helpers

unsigned channel_blocks(const BatchNormShape& s, const char* op) {
  validate(s);
  if (s.c > 2147483647) throw DeviceError(std::string(op) + ": too many channels");
  return static_cast<unsigned>(s.c);
}

void launch_normalise(cudaStream_t stream, const BatchNormShape& s, const void* x, const float* gamma,
                      const float* beta, const float* mean, const float* var, void* y, void* mask) {
  const std::int64_t count = s.n * s.c * s.h * s.w;
  normalise_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, s.dtype, gamma, beta, mean, var,
                                                             static_cast<double>(s.eps), s.relu, y,
                                                             static_cast<std::uint32_t*>(mask), count, s.c,
                                                             s.h * s.w);
  check_launch("normalise_kernel");
}

// The sums of one of our own whole passes: the table's per-channel scratch, as
// doubles (2c + 1 of them).
double* pass_sums(Context& ctx, const BatchNormShape& s, const char* op) {
  if (batchnorm_sums_count(s.c) * 2 > Context::kChannelScratchFloats)
    throw DeviceError(std::string(op) + ": " + std::to_string(s.c) + " channels are more than a 16-bit or " +
                      "fused-ReLU batch norm on this device sums (" + std::to_string(Context::kChannelScratchFloats / 4 - 1) + ")");
  return reinterpret_cast<double*>(ctx.channel_scratch);
}

}  // namespace

// ---------------------------------------------------------------- our own whole passes

namespace cuda {

void batchnorm_own_forward_train(Context& ctx, const BatchNormShape& s, const void* x, const float* gamma,
                                 const float* beta, void* y, float* saved_mean, float* saved_var,
                                 float* running_mean, float* running_var, void* relu_mask) {
  if (s.relu && relu_mask == nullptr)
    throw DeviceError("batchnorm_forward_train: a fused ReLU needs its mask and got none");
  const unsigned blocks = channel_blocks(s, "batchnorm_forward_train");
  double* sums = pass_sums(ctx, s, "batchnorm_forward_train");
  forward_sums_kernel<<<blocks, kSumThreads, 0, ctx.stream>>>(x, s.dtype, sums, s.n, s.c, s.h * s.w);
  check_launch("forward_sums_kernel");
  const bool running = running_mean != nullptr && running_var != nullptr;
  statistics_kernel<<<grid_for(s.c), kThreads, 0, ctx.stream>>>(
      sums, s.c, s.momentum, saved_mean, saved_var, running ? running_mean : nullptr, running ? running_var : nullptr);
  check_launch("statistics_kernel");
  launch_normalise(ctx.stream, s, x, gamma, beta, saved_mean, saved_var, y, s.relu ? relu_mask : nullptr);
}

void batchnorm_own_forward_infer(Context& ctx, const BatchNormShape& s, const void* x, const float* gamma,
                                   const float* beta, const float* running_mean, const float* running_var, void* y) {
  validate(s);
  launch_normalise(ctx.stream, s, x, gamma, beta, running_mean, running_var, y, nullptr);
}

void batchnorm_own_backward(Context& ctx, const BatchNormShape& s, const void* x, const void* dy,
                            const float* gamma, const float* saved_mean, const float* saved_var, void* dx,
                            float* dgamma, float* dbeta, const void* relu_mask) {
  if (s.relu && relu_mask == nullptr) throw DeviceError("batchnorm_backward: a fused ReLU needs its mask and got none");
  const auto* mask = s.relu ? static_cast<const std::uint32_t*>(relu_mask) : nullptr;
  const unsigned blocks = channel_blocks(s, "batchnorm_backward");
  double* sums = pass_sums(ctx, s, "batchnorm_backward");
  backward_sums_kernel<<<blocks, kSumThreads, 0, ctx.stream>>>(
      x, dy, mask, s.dtype, saved_mean, saved_var, static_cast<double>(s.eps), sums, dgamma, dbeta, s.n, s.c,
      s.h * s.w);
  check_launch("backward_sums_kernel");
  const std::int64_t count = s.n * s.c * s.h * s.w;
  dx_kernel<<<grid_for(count), kThreads, 0, ctx.stream>>>(x, dy, mask, s.dtype, gamma, saved_mean, saved_var,
                                                          sums, static_cast<double>(s.eps), dx, count, s.c, s.h * s.w);
  check_launch("dx_kernel");
}

}  // namespace cuda

// ---------------------------------------------------------------- launchers

std::size_t CudaKernels::batchnorm_relu_mask_bytes(const BatchNormShape& s) const { return gpu_relu_mask_bytes(s); }

void CudaKernels::batchnorm_sums(const BatchNormShape& s, const float* x, double* sums) {
  require_f32(s.dtype, "batchnorm_sums");
  const unsigned blocks = channel_blocks(s, "batchnorm_sums");
  forward_sums_kernel<<<blocks, kSumThreads, 0, ctx_->stream>>>(x, DType::f32, sums, s.n, s.c, s.h * s.w);
  check_launch("forward_sums_kernel");
}

void CudaKernels::batchnorm_forward_with_sums(const BatchNormShape& s, const float* x, const float* gamma,
                                              const float* beta, const double* sums, float* y, float* saved_mean,
                                              float* saved_var, float* running_mean, float* running_var) {
  require_f32(s.dtype, "batchnorm_forward_with_sums");
  validate(s);
  const bool running = running_mean != nullptr && running_var != nullptr;
  statistics_kernel<<<grid_for(s.c), kThreads, 0, ctx_->stream>>>(
      sums, s.c, s.momentum, saved_mean, saved_var, running ? running_mean : nullptr, running ? running_var : nullptr);
  check_launch("statistics_kernel");
  batchnorm_forward_infer(s, x, gamma, beta, saved_mean, saved_var, y);
}

void CudaKernels::batchnorm_backward_sums(const BatchNormShape& s, const float* x, const float* dy,
                                          const float* saved_mean, const float* saved_var, double* sums,
                                          float* dgamma, float* dbeta) {
  require_f32(s.dtype, "batchnorm_backward_sums");
  const unsigned blocks = channel_blocks(s, "batchnorm_backward_sums");
  backward_sums_kernel<<<blocks, kSumThreads, 0, ctx_->stream>>>(
      x, dy, nullptr, DType::f32, saved_mean, saved_var, static_cast<double>(s.eps), sums, dgamma, dbeta, s.n, s.c,
      s.h * s.w);
  check_launch("backward_sums_kernel");
}

void CudaKernels::batchnorm_backward_with_sums(const BatchNormShape& s, const float* x, const float* dy,
                                               const float* gamma, const float* saved_mean, const float* saved_var,
                                               const double* sums, float* dx) {
  require_f32(s.dtype, "batchnorm_backward_with_sums");
  validate(s);
  const std::int64_t count = s.n * s.c * s.h * s.w;
  dx_kernel<<<grid_for(count), kThreads, 0, ctx_->stream>>>(x, dy, nullptr, DType::f32, gamma, saved_mean, saved_var, sums,
                                                            static_cast<double>(s.eps), dx, count, s.c, s.h * s.w);
  check_launch("dx_kernel");
}

}  // namespace tidepool
