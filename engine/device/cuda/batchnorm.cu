// Batch normalisation on cuDNN (CUDNN_BATCHNORM_SPATIAL: per channel over
// n, h, w), NCHW data, with two tiny kernels that translate cuDNN's saved
// statistic into the one the kernel table promises.
//
// The table's contract (kernels.h) is that saved_var holds the batch's
// biased variance, which is what the cpu device writes and what a view of
// the saved tensors expects. cuDNN instead saves the inverse standard
// deviation 1 / sqrt(var + eps), and its backward wants that back. So:
//  - forward: cuDNN writes invstd into saved_var, then invstd_to_var turns
//    it into the variance in place (in double, so the round trip loses
//    less than one float step; clamped at 0, which that step can cross);
//  - backward: var_to_invstd recomputes invstd into the table's per-channel
//    scratch, which cuDNN reads. Layers with more channels than the scratch
//    holds (none in the zoo) let cuDNN recompute the statistics from x.
// Running statistics follow PyTorch, as on the cpu device: cuDNN updates
// them with factor = momentum and the unbiased batch variance.
// 16-bit activations (s.dtype bf16 or f16) and a fused ReLU (s.relu) take
// kernels of our own instead (batchnorm_sums.cu).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

// ---------------------------------------------------------------- kernels

__global__ void invstd_to_var_kernel(float* __restrict__ v, std::int64_t channels, double eps) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < channels; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double s = v[i];
    // A channel with (almost) no spread has invstd ~ 1/sqrt(eps), rounded
    // to float; rounded up, 1/s^2 falls below eps and the difference is a
    // tiny negative "variance". A variance is never negative: clamp.
    v[i] = static_cast<float>(fmax(1.0 / (s * s) - eps, 0.0));
  }
}

__global__ void var_to_invstd_kernel(const float* __restrict__ var, float* __restrict__ invstd,
                                     std::int64_t channels, double eps) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < channels; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    invstd[i] = static_cast<float>(1.0 / sqrt(static_cast<double>(var[i]) + eps));
  }
}

// ---------------------------------------------------------------- helpers

// Descriptors per shape: the data [n, c, h, w] and the per-channel [1, c, 1, 1].
struct BnDescs final : CacheEntry {
  TensorDesc data, channel;
};

const BnDescs& descs(Context& ctx, const BatchNormShape& s) {
  const CacheKey key = {static_cast<std::int64_t>(Op::batchnorm), s.n, s.c, s.h, s.w};
  return ctx.shared->plans.entry<BnDescs>(key, [&] {
    validate(s);
    auto d = std::make_unique<BnDescs>();
    d->data = tensor_desc(s.n, s.c, s.h, s.w);
    d->channel = tensor_desc(1, s.c, 1, 1);
    return d;
  });
}

constexpr float kOne = 1.0f, kZero = 0.0f;

}  // namespace

void CudaKernels::batchnorm_forward_train(const BatchNormShape& s, const void* x,
                                          const float* gamma, const float* beta, void* y,
                                          float* saved_mean, float* saved_var, float* running_mean,
                                          float* running_var, void* relu_mask) {
  if (is_16bit(s.dtype) || s.relu)
    return batchnorm_own_forward_train(*ctx_, s, x, gamma, beta, y, saved_mean, saved_var, running_mean,
                                       running_var, relu_mask);
  const BnDescs& d = descs(*ctx_, s);
  // cuDNN's unbiased running variance divides by n*h*w - 1; with a single
  // value per channel that is 0/0, where the cpu device uses the batch's 0.
  if (s.n * s.h * s.w < 2) {
    throw std::invalid_argument(
        "batchnorm: training on the cuda device needs more than one value per channel (n*h*w = " +
        std::to_string(s.n * s.h * s.w) + "); use a larger batch");
  }
  const bool running = running_mean != nullptr && running_var != nullptr;
  TP_CALL(cudnnBatchNormalizationForwardTraining, ctx_->cudnn.get(), CUDNN_BATCHNORM_SPATIAL, &kOne,
          &kZero, d.data.get(), x, d.data.get(), y, d.channel.get(), gamma, beta,
          static_cast<double>(s.momentum), running ? running_mean : nullptr,
          running ? running_var : nullptr, static_cast<double>(s.eps), saved_mean, saved_var);
  invstd_to_var_kernel<<<grid_for(s.c), kThreads, 0, ctx_->stream>>>(saved_var, s.c,
                                                                     static_cast<double>(s.eps));
  check_launch("invstd_to_var_kernel");
}

void CudaKernels::batchnorm_forward_infer(const BatchNormShape& s, const void* x,
                                          const float* gamma, const float* beta,
                                          const float* running_mean, const float* running_var,
                                          void* y) {
  if (is_16bit(s.dtype) || s.relu)
    return batchnorm_own_forward_infer(*ctx_, s, x, gamma, beta, running_mean, running_var, y);
  const BnDescs& d = descs(*ctx_, s);
  TP_CALL(cudnnBatchNormalizationForwardInference, ctx_->cudnn.get(), CUDNN_BATCHNORM_SPATIAL,
          &kOne, &kZero, d.data.get(), x, d.data.get(), y, d.channel.get(), gamma, beta,
          running_mean, running_var, static_cast<double>(s.eps));
}

void CudaKernels::batchnorm_backward(const BatchNormShape& s, const void* x, const void* dy,
                                     const float* gamma, const float* saved_mean,
                                     const float* saved_var, void* dx, float* dgamma,
                                     float* dbeta, const void* relu_mask) {
  if (is_16bit(s.dtype) || s.relu)
    return batchnorm_own_backward(*ctx_, s, x, dy, gamma, saved_mean, saved_var, dx, dgamma, dbeta, relu_mask);
  const BnDescs& d = descs(*ctx_, s);
  const float* mean = nullptr;
  const float* invstd = nullptr;
  if (s.c <= Context::kChannelScratchFloats) {
    var_to_invstd_kernel<<<grid_for(s.c), kThreads, 0, ctx_->stream>>>(
        saved_var, ctx_->channel_scratch, s.c, static_cast<double>(s.eps));
    check_launch("var_to_invstd_kernel");
    mean = saved_mean;
    invstd = ctx_->channel_scratch;
  }
  // Both data and parameter gradients overwrite (beta = 0), as the table's
  // backward kernels must.
  TP_CALL(cudnnBatchNormalizationBackward, ctx_->cudnn.get(), CUDNN_BATCHNORM_SPATIAL, &kOne,
          &kZero, &kOne, &kZero, d.data.get(), x, d.data.get(), dy, d.data.get(), dx,
          d.channel.get(), gamma, dgamma, dbeta, static_cast<double>(s.eps), mean, invstd);
}

}  // namespace tidepool
