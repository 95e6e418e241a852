// What a device's kernels answer before anything runs: the sizes the
// planner places (workspaces, saved tensors, masks), the activation layout
// and which 16-bit types compute natively. Pure and const: answering
// computes nothing on the device.
//
// The planner, the performance model's static analysis, `plan`, `tune` and
// the sim device ask a KernelQueries, never a kernel table, so a plan is
// made from the answers of the device it plans for:
//  - the cpu device answers from oneDNN (engine/device/cpu/cpu_queries.h);
//  - the cuda device answers from cuDNN (CudaKernels, on a GPU);
//  - a GPU that is not here answers from its profile: what
//    `tidepool profile --device cuda` measured, and the documented model of
//    cuDNN's choices for the rest (engine/device/gpu_queries.h).
// A GPU's plan therefore never depends on the host's CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/dtype.h"
#include "engine/device/kernel_shapes.h"

namespace tidepool {

class KernelQueries {
 public:
  virtual ~KernelQueries() = default;

  // True where convolution, batch norm (the whole-pass kernels), ReLU,
  // pooling and the residual add (the layers whose has_16bit_kernels() is
  // true) compute on activations of 16-bit `type` themselves (cuDNN in the
  // 16-bit type with f32 accumulation; oneDNN's bf16 primitives), so a
  // 16-bit step of theirs needs no f32 copies (engine/step_calls/f32_views.h).
  virtual bool takes_16bit(DType type) const { return false; }
  // Why this device cannot train with 16-bit `type` at all ("" where it
  // can, natively or through f32 copies). A GPU without bf16 arithmetic
  // (before compute capability 8.0) refuses bf16: there cuDNN has no bf16
  // convolutions, and no user runs bf16 on such a GPU.
  virtual std::string refuses_16bit(DType type) const { return ""; }

  // The channel block the device's kernels compute fastest in
  // (kernel_shapes.h channel_blocked); 0: every tensor NCHW.
  virtual std::int64_t channel_block() const { return 0; }

  // Scratch bytes a convolution pass needs under an algorithm scheme, a
  // 16-bit pass's weight copy included (conv_weights_copy_bytes).
  virtual std::size_t conv_workspace_bytes(const ConvShape&, ConvScheme, ConvPass) const = 0;
  // A fused ReLU's mask (BatchNormShape::relu); 0 without one.
  virtual std::size_t batchnorm_relu_mask_bytes(const BatchNormShape&) const = 0;
  // What max pooling keeps from forward to backward (argmax indices).
  virtual std::size_t pool_saved_bytes(const PoolShape&) const = 0;
};

}  // namespace tidepool
