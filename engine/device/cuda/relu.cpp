// ReLU on cuDNN's activation functions, over a flat run of `count` floats;
// 16-bit activations take kernels of our own (relu_16bit.cu).
//
// Backward reads the forward output y, never x (see the cpu device's
// relu.cpp for why the executor wants that). cuDNN's backward asks for x as
// well; for ReLU, y > 0 exactly where x > 0, so y serves as x and the
// gradient is the same: dy where y > 0, else 0.
//
// cuDNN's 4-d descriptors index with 32-bit integers, so runs longer than
// kChunk elements are processed in pieces (an elementwise op does not care
// where one piece ends).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool {
namespace {

using namespace cuda;

constexpr std::int64_t kChunk = std::int64_t{1} << 30;
constexpr float kOne = 1.0f, kZero = 0.0f;

ActivationDesc relu_desc() {
  cudnnActivationDescriptor_t raw = nullptr;
  TP_CALL(cudnnCreateActivationDescriptor, &raw);
  ActivationDesc desc(raw);
  // NaN propagates, as max(x, 0) in the cpu device's oneDNN kernel does.
  TP_CALL(cudnnSetActivationDescriptor, desc.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN,
          0.0);
  return desc;
}

// Calls f(offset, tensor descriptor) for each piece of a flat run.
template <class F>
void in_chunks(std::int64_t count, F&& f) {
  if (count < 0) throw std::invalid_argument("relu: count " + std::to_string(count));
  for (std::int64_t offset = 0; offset < count; offset += kChunk) {
    const std::int64_t n = std::min(kChunk, count - offset);
    const TensorDesc desc = tensor_desc(1, n, 1, 1);
    f(offset, desc.get());
  }
}

}  // namespace

void CudaKernels::relu_forward(std::int64_t count, DType type, const void* x_, void* y_) {
  if (is_16bit(type)) return launch_relu_forward_16bit(ctx_->stream, count, type, x_, y_);
  require_f32(type, "relu_forward");
  const auto* x = static_cast<const float*>(x_);
  auto* y = static_cast<float*>(y_);
  const ActivationDesc act = relu_desc();
  in_chunks(count, [&](std::int64_t off, cudnnTensorDescriptor_t desc) {
    TP_CALL(cudnnActivationForward, ctx_->cudnn.get(), act.get(), &kOne, desc, x + off, &kZero,
            desc, y + off);
  });
}

void CudaKernels::relu_backward(std::int64_t count, DType type, const void* y_, const void* dy_, void* dx_) {
  if (is_16bit(type)) return launch_relu_backward_16bit(ctx_->stream, count, type, y_, dy_, dx_);
  require_f32(type, "relu_backward");
  const auto* y = static_cast<const float*>(y_);
  const auto* dy = static_cast<const float*>(dy_);
  auto* dx = static_cast<float*>(dx_);
  const ActivationDesc act = relu_desc();
  in_chunks(count, [&](std::int64_t off, cudnnTensorDescriptor_t desc) {
    TP_CALL(cudnnActivationBackward, ctx_->cudnn.get(), act.get(), &kOne, desc, y + off, desc,
            dy + off, desc, y + off, &kZero, desc, dx + off);
  });
}

}  // namespace tidepool
