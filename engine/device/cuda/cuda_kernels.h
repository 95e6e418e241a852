// The cuda device's kernel table: cuDNN for convolution, batch norm, ReLU
// and softmax; cuBLAS for the fully connected layers; small kernels of our
// own (the .cu files) for pooling, dropout, the elementwise ops, the loss,
// SGD and bias gradients.
//
// A table is bound to one stream for its whole life: every call only
// enqueues work there and returns (the device makes one table per stream).
// Pointers are device pointers into the arena; the exceptions are the
// workspace queries, which touch no data and may come from any thread
// (they make the table's GPU the thread's current device first, and plan
// with a cuDNN handle of their own, never the one the table enqueues
// with; the enqueueing calls rely on CudaDevice::submit having bound).
//
// Numbers: f32 runs plain f32. Convolutions run with CUDNN_FMA_MATH,
// so an Ampere or Hopper GPU does not quietly switch to TF32 tensor cores
// and the results stay comparable with the cpu device. Under --precision
// bf16|fp16 convolution, batch norm, ReLU, pooling and add compute on the 16-bit
// activations themselves (takes_16bit): cuDNN's convolutions in the 16-bit
// type with f32 accumulation, tensor-op math allowed (the precision asks
// for it), on 16-bit copies of the f32 weights; the other ops work on f32
// copies as on the cpu device (engine/step_calls/f32_views.h). Only cuDNN
// algorithms that report themselves deterministic are ever chosen, and our
// own reductions use fixed trees instead of atomics: the same inputs give
// the same bits on the same GPU, which is what lets every offload mode
// reproduce `base` exactly. Dropout, add, accumulate and SGD match the cpu
// device bit for bit.
//
// cuDNN and cuBLAS stay behind a pimpl: nothing outside engine/device/cuda/ may
// see their headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/device/kernels.h"

namespace tidepool {

namespace cuda {
struct Context;
}

class CudaKernels final : public Kernels {
 public:
  // Built by CudaDevice, which owns the stream and the handles' context.
  explicit CudaKernels(std::unique_ptr<cuda::Context> context);
  ~CudaKernels() override;
  CudaKernels(const CudaKernels&) = delete;
  CudaKernels& operator=(const CudaKernels&) = delete;

  // The cuDNN algorithm a convolution pass runs with and how it was chosen,
  // e.g. "IMPLICIT_PRECOMP_GEMM (p: measured 0.084 ms; workspace 0.2 MiB)",
  // for logs and tests; after cuDNN refused the choice when it ran, the
  // fallback that runs instead (conv2d.cpp).
  std::string conv_algorithm_name(const ConvShape&, ConvScheme, ConvPass);
  // Whether the algorithm was picked by timing it (cudnnFind*) rather than
  // from cuDNN's heuristic ranking. Only `p` measures, and only while the
  // device has not reserved its arena yet.
  bool conv_algorithm_measured(const ConvShape&, ConvScheme, ConvPass);

  // Convolution, batch norm, ReLU, pooling and add take bf16 and f16
  // activations (conv2d.cpp, batchnorm_sums.cu, relu_16bit.cu, pooling.cu,
  // elementwise.cu).
  // f16 everywhere; bf16 where cuDNN has bf16 convolutions (compute
  // capability 8.0, Ampere, and later). Before that bf16 is refused
  // (refuses_16bit): no one trains bf16 on such a GPU.
  bool takes_16bit(DType type) const override;
  std::string refuses_16bit(DType type) const override;

  std::size_t conv_workspace_bytes(const ConvShape&, ConvScheme, ConvPass) const override;
  void conv_forward(const ConvShape&, ConvScheme, const void* x, const float* w, const float* b,
                    void* y, void* workspace) override;
  void conv_backward_data(const ConvShape&, ConvScheme, const void* dy, const float* w, void* dx,
                          void* workspace) override;
  void conv_backward_weights(const ConvShape&, ConvScheme, const void* x, const void* dy,
                             float* dw, float* db, void* workspace) override;

  void batchnorm_forward_train(const BatchNormShape&, const void* x, const float* gamma,
                               const float* beta, void* y, float* saved_mean, float* saved_var,
                               float* running_mean, float* running_var, void* relu_mask) override;
  std::size_t batchnorm_relu_mask_bytes(const BatchNormShape&) const override;
  void batchnorm_forward_infer(const BatchNormShape&, const void* x, const float* gamma,
                               const float* beta, const float* running_mean,
                               const float* running_var, void* y) override;
  void batchnorm_backward(const BatchNormShape&, const void* x, const void* dy,
                          const float* gamma, const float* saved_mean, const float* saved_var,
                          void* dx, float* dgamma, float* dbeta, const void* relu_mask) override;
  void batchnorm_sums(const BatchNormShape&, const float* x, double* sums) override;
  void batchnorm_forward_with_sums(const BatchNormShape&, const float* x, const float* gamma, const float* beta,
                                   const double* sums, float* y, float* saved_mean, float* saved_var,
                                   float* running_mean, float* running_var) override;
  void batchnorm_backward_sums(const BatchNormShape&, const float* x, const float* dy, const float* saved_mean,
                               const float* saved_var, double* sums, float* dgamma, float* dbeta) override;
  void batchnorm_backward_with_sums(const BatchNormShape&, const float* x, const float* dy, const float* gamma,
                                    const float* saved_mean, const float* saved_var, const double* sums,
                                    float* dx) override;

  void relu_forward(std::int64_t count, DType type, const void* x, void* y) override;
  void relu_backward(std::int64_t count, DType type, const void* y, const void* dy, void* dx) override;

  std::size_t pool_saved_bytes(const PoolShape&) const override;
  void pool_forward(const PoolShape&, const void* x, void* y, void* saved) override;
  void pool_backward(const PoolShape&, const void* x, const void* dy, const void* saved,
                     void* dx) override;

  void linear_forward(const LinearShape&, const float* x, const float* w, const float* b,
                      float* y) override;
  void linear_backward_data(const LinearShape&, const float* dy, const float* w,
                            float* dx) override;
  void linear_backward_weights(const LinearShape&, const float* x, const float* dy, float* dw,
                               float* db) override;

  void dropout_forward(std::int64_t count, float p, std::uint64_t seed, const float* x, float* y,
                       float* mask) override;
  void dropout_backward(std::int64_t count, const float* mask, const float* dy, float* dx) override;

  void add_forward(std::int64_t count, DType type, const void* a, const void* b, void* y) override;
  void add_relu_forward(std::int64_t count, DType type, const void* a, const void* b, void* y) override;
  void copy(std::int64_t count, const float* x, float* y) override;
  void accumulate(std::int64_t count, const float* x, float* acc) override;
  void convert(std::int64_t count, DType from, const void* x, DType to, void* y, float scale) override;
  void accumulate_16bit(std::int64_t count, DType type, const void* x, void* acc) override;
  void fill(std::int64_t count, float value, float* y) override;
  void unscale_check(std::int64_t count, float* g, float inv_scale, float* overflow) override;

  void softmax_xent_forward(std::int64_t n, std::int64_t classes, const float* logits,
                            const std::int32_t* labels, float* probs,
                            float* loss_and_correct) override;
  void softmax_xent_backward(std::int64_t n, std::int64_t classes, const float* probs,
                             const std::int32_t* labels, float* dlogits) override;

  void sgd_update(std::int64_t count, float lr, float momentum, float weight_decay, float* w,
                  const float* dw, float* velocity, const float* skip) override;

 private:
  std::unique_ptr<cuda::Context> ctx_;
};

}  // namespace tidepool
