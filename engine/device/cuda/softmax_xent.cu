// Softmax cross-entropy over rows of logits [n, classes], averaged over the
// batch, with the top-1 and top-5 counts the trainer reports.
//
// The probabilities for backward come from cuDNN (CUDNN_SOFTMAX_ACCURATE:
// each row shifted by its maximum, so nothing overflows). The loss and the
// counts come from one block of our own that reads the logits again:
//  - each warp takes rows warp, warp + kWarps, ...; within a row its lanes
//    find the first maximum, sum exp(l - max) and count the classes ranked
//    above the label, combined with fixed shuffle trees;
//  - the loss of a row is log(sum) - (l[label] - max), as on the cpu
//    device (finite even when the label's probability underflows);
//  - the per-warp sums are added in warp order by one thread, in double.
// Nothing depends on scheduling, so the result repeats bit for bit. A label
// outside [0, classes) cannot throw from a kernel: it makes the loss NaN,
// which the trainer reports as a diverged run.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

constexpr int kLossThreads = 512;
constexpr int kWarps = kLossThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

// ---------------------------------------------------------------- kernels

__global__ void xent_loss_kernel(std::int64_t n, std::int64_t classes,
                                 const float* __restrict__ logits,
                                 const std::int32_t* __restrict__ labels,
                                 float* __restrict__ loss_and_correct) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double loss = 0.0;  // meaningful in lane 0
  int top1 = 0, top5 = 0;
  bool bad_label = false;
  for (std::int64_t row = warp; row < n; row += kWarps) {
    const float* l = logits + row * classes;
    const std::int32_t label = labels[row];
    if (label < 0 || label >= classes) {
      bad_label = true;
      continue;
    }
    // First maximum: each lane scans its classes in order, then pairs are
    // merged keeping the larger value, or the smaller index on a tie.
    float best = -__int_as_float(0x7f800000);  // -inf
    std::int64_t best_j = classes;
    for (std::int64_t j = lane; j < classes; j += 32) {
      if (l[j] > best || best_j == classes) {
        best = l[j];
        best_j = j;
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(kFullMask, best, offset);
      const std::int64_t other_j = __shfl_xor_sync(kFullMask, best_j, offset);
      if (other > best || (other == best && other_j < best_j)) {
        best = other;
        best_j = other_j;
      }
    }
    const float label_logit = l[label];
    float sum = 0.0f;
    int above = 0;  // classes ranked above the label
    for (std::int64_t j = lane; j < classes; j += 32) {
      sum += expf(l[j] - best);
      above += l[j] > label_logit || (l[j] == label_logit && j < label);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      sum += __shfl_xor_sync(kFullMask, sum, offset);
      above += __shfl_xor_sync(kFullMask, above, offset);
    }
    if (lane == 0) {
      loss += log(static_cast<double>(sum)) - static_cast<double>(label_logit - best);
      top1 += best_j == label;
      top5 += above < 5;
    }
  }

  __shared__ double warp_loss[kWarps];
  __shared__ int warp_top1[kWarps], warp_top5[kWarps], warp_bad[kWarps];
  if (lane == 0) {
    warp_loss[warp] = loss;
    warp_top1[warp] = top1;
    warp_top5[warp] = top5;
    warp_bad[warp] = bad_label;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    int c1 = 0, c5 = 0;
    bool bad = false;
    for (int w = 0; w < kWarps; ++w) {
      total += warp_loss[w];
      c1 += warp_top1[w];
      c5 += warp_top5[w];
      bad = bad || warp_bad[w];
    }
    loss_and_correct[0] = bad ? __int_as_float(0x7fc00000) : static_cast<float>(total / n);
    loss_and_correct[1] = static_cast<float>(c1);
    loss_and_correct[2] = static_cast<float>(c5);
  }
}

// d(mean loss)/d(logit) = (softmax - onehot(label)) / n, rounded as the cpu
// device rounds it: p * inv_n, then minus inv_n at the label.
__global__ void xent_backward_kernel(std::int64_t n, std::int64_t classes, float inv_n,
                                     const float* __restrict__ probs,
                                     const std::int32_t* __restrict__ labels,
                                     float* __restrict__ dlogits) {
  const std::int64_t total = n * classes;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / classes, j = i - row * classes;
    float d = __fmul_rn(probs[i], inv_n);
    if (j == labels[row]) d = __fsub_rn(d, inv_n);
    dlogits[i] = d;
  }
}

void validate(std::int64_t n, std::int64_t classes) {
  if (n <= 0 || classes <= 0)
    throw std::invalid_argument("softmax_xent: empty batch or no classes");
}

constexpr float kOne = 1.0f, kZero = 0.0f;

}  // namespace

// ---------------------------------------------------------------- launchers

void CudaKernels::softmax_xent_forward(std::int64_t n, std::int64_t classes, const float* logits,
                                       const std::int32_t* labels, float* probs,
                                       float* loss_and_correct) {
  validate(n, classes);
  const TensorDesc rows = tensor_desc(n, classes, 1, 1);
  TP_CALL(cudnnSoftmaxForward, ctx_->cudnn.get(), CUDNN_SOFTMAX_ACCURATE,
          CUDNN_SOFTMAX_MODE_INSTANCE, &kOne, rows.get(), logits, &kZero, rows.get(), probs);
  xent_loss_kernel<<<1, kLossThreads, 0, ctx_->stream>>>(n, classes, logits, labels,
                                                         loss_and_correct);
  check_launch("xent_loss_kernel");
}

void CudaKernels::softmax_xent_backward(std::int64_t n, std::int64_t classes, const float* probs,
                                        const std::int32_t* labels, float* dlogits) {
  validate(n, classes);
  const float inv_n = 1.0f / static_cast<float>(n);
  xent_backward_kernel<<<grid_for(n * classes), kThreads, 0, ctx_->stream>>>(
      n, classes, inv_n, probs, labels, dlogits);
  check_launch("xent_backward_kernel");
}

}  // namespace tidepool
