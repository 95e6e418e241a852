// Per-channel sums for bias gradients (conv: over n, h, w; linear: over n),
// and the bias add of 16-bit convolution outputs.
//
// One block per channel; each thread owns a fixed set of elements and the
// block combines the partial sums with a fixed tree. Nothing depends on
// scheduling, so the result is the same bits every run, which cuDNN's and
// cuBLAS's atomics-based reductions would not promise.
#include <cstdint>

#include "engine/device/cuda/cuda_util.h"
#include "engine/device/cuda/storage.cuh"

namespace tidepool::cuda {
namespace {

constexpr int kSumThreads = 512;

// ---------------------------------------------------------------- kernels

__global__ void channel_sum_kernel(const void* __restrict__ x, DType t, float* __restrict__ out,
                                   std::int64_t outer, std::int64_t channels, std::int64_t inner) {
  const std::int64_t ch = blockIdx.x;
  float acc = 0.0f;
  if (inner >= kSumThreads / 2) {
    // Wide feature maps: walk each image's map with coalesced reads and no
    // index division.
    for (std::int64_t i = 0; i < outer; ++i) {
      const std::int64_t row = (i * channels + ch) * inner;
      for (std::int64_t j = threadIdx.x; j < inner; j += kSumThreads) acc += load(x, row + j, t);
    }
  } else {
    // Small maps (1x1 after global pooling, linear layers): flatten (i, j)
    // so every thread has work.
    const std::int64_t total = outer * inner;
    for (std::int64_t e = threadIdx.x; e < total; e += kSumThreads) {
      const std::int64_t i = e / inner, j = e - i * inner;
      acc += load(x, (i * channels + ch) * inner + j, t);
    }
  }
  __shared__ float partial[kSumThreads];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kSumThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[ch] = partial[0];
}

__global__ void add_channel_bias_kernel(void* y, DType t, const float* __restrict__ b, std::int64_t channels,
                                        std::int64_t inner, std::int64_t total) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    store(y, e, t, load(y, e, t) + b[(e / inner) % channels]);
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void launch_channel_sum(cudaStream_t stream, const void* x, DType type, float* out, std::int64_t outer,
                        std::int64_t channels, std::int64_t inner) {
  if (channels <= 0) return;
  if (channels > 2147483647) throw DeviceError("channel sum: too many channels");
  channel_sum_kernel<<<static_cast<unsigned>(channels), kSumThreads, 0, stream>>>(x, type, out, outer,
                                                                                  channels, inner);
  check_launch("channel_sum_kernel");
}

void launch_add_channel_bias(cudaStream_t stream, void* y, DType type, const float* b, std::int64_t outer,
                             std::int64_t channels, std::int64_t inner) {
  const std::int64_t total = outer * channels * inner;
  if (total <= 0) return;
  add_channel_bias_kernel<<<grid_for(total), kThreads, 0, stream>>>(y, type, b, channels, inner, total);
  check_launch("add_channel_bias_kernel");
}

}  // namespace tidepool::cuda
