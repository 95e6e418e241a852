// The cpu device's kernel table: oneDNN primitives for the heavy ops
// (convolution, batch norm, pooling, inner product, relu) and plain loops for
// the memory-bound ones (dropout, elementwise, softmax cross-entropy, SGD).
//
// oneDNN stays behind a pimpl: this header is included by the cpu device and
// by tests, and nothing outside engine/device/cpu/*.cpp may see dnnl.hpp.
//
// Threading: workspace and saved-size queries may come from any thread (the
// planner); kernel calls come from the compute stream's worker. Primitives
// are created once per (op, shape, scheme, pass) and cached for the lifetime
// of the table; creation is serialised by a mutex, execution is not.
//
// Convolution workspace: the caller's workspace holds the copies of operands
// that oneDNN wants in a blocked layout and the primitive's scratchpad. Each
// piece starts at a multiple of 64 bytes from the start of the workspace, so
// it is 64-byte aligned whenever the workspace itself is (the arena's
// offsets are). conv_workspace_bytes is exactly the span those pieces cover.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/device/kernels.h"

namespace tidepool {

namespace onednn {
struct Context;
}

class CpuKernels : public Kernels {
 public:
  CpuKernels();
  ~CpuKernels() override;
  CpuKernels(const CpuKernels&) = delete;
  CpuKernels& operator=(const CpuKernels&) = delete;

  // bf16 where the processor has AVX-512 BF16 (or AMX) and oneDNN a jit
  // bf16 convolution for it (onednn::native_bf16): convolution, batch
  // norm, ReLU and pooling then run oneDNN's bf16 primitives (f32
  // accumulation, f32 weights and statistics; the weights reordered into a
  // bf16 copy in the convolution's workspace), the residual add a loop
  // that sums in f32 and rounds once. Elsewhere (AVX2; AVX-512 without
  // BF16, where oneDNN would emulate it) and for f16, which oneDNN 2.6
  // cannot train on x86, the table takes f32 only and 16-bit steps get f32
  // copies (engine/step_calls/f32_views.h). Capped by ONEDNN_MAX_CPU_ISA like
  // the rest of oneDNN.
  bool takes_16bit(DType type) const override { return type == DType::bf16 && native_bf16_; }

  // The channel block oneDNN's convolutions choose on this processor (8 on
  // AVX2, 16 with AVX-512): schedules keep activations in it
  // (kernels.h channel_blocked), so no layer reorders them.
  std::int64_t channel_block() const override { return channel_block_; }
  void unblock_channels(const ChannelBlocks&, const float* x, float* y) override;
  void block_channels(const ChannelBlocks&, const float* x, float* y) override;

  // The oneDNN implementation a convolution pass runs with, e.g.
  // "jit:avx2 (any layout)", for logs and the planner's report.
  std::string conv_algorithm_name(const ConvShape&, ConvScheme, ConvPass);

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
  void batchnorm_forward_infer(const BatchNormShape&, const void* x, const float* gamma,
                               const float* beta, const float* running_mean,
                               const float* running_var, void* y) override;
  void batchnorm_backward(const BatchNormShape&, const void* x, const void* dy,
                          const float* gamma, const float* saved_mean, const float* saved_var,
                          void* dx, float* dgamma, float* dbeta, const void* relu_mask) override;
  std::size_t batchnorm_relu_mask_bytes(const BatchNormShape&) const override;
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
  void dropout_forward_blocked(const ChannelBlocks&, float p, std::uint64_t seed, const float* x, float* y,
                               float* mask) override;

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
  // require_f32's message for a type this table does not take (f32 and,
  // where takes_16bit, bf16 pass).
  void require_activation_type(DType type, const char* op) const;

  std::unique_ptr<onednn::Context> ctx_;
  std::int64_t channel_block_ = 0;
  bool native_bf16_ = false;
};

}  // namespace tidepool
