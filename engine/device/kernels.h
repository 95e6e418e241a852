// The table of kernels every device implements (cpu/: oneDNN, cuda/: cuDNN).
//
// Kernels see raw pointers into device memory and run synchronously with
// respect to the stream they are called on: the cpu device calls them on the
// compute stream's worker thread; a cuda device's table is bound to its
// compute stream and only enqueues. All tensors are dense f32 in NCHW order
// (labels are i32), except where a table takes 16-bit activations
// (takes_16bit): there convolution, batch norm, ReLU, pooling and add read
// and write bf16 or f16 activations as their shapes' or calls' dtype says.
// Elsewhere 16-bit activations are widened to f32 around the kernels that
// compute with them (convert; engine/step_calls/f32_views.h). Scratch memory is
// never allocated inside a kernel: a caller asks for the workspace size first, takes that many bytes from the
// arena and passes them in, which is what lets the planner see every byte.
//
// Backward kernels overwrite their outputs (dx, dw, db); gradient
// accumulation for fan-out tensors is an explicit `accumulate` call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/dtype.h"
#include "engine/device/kernel_queries.h"
#include "engine/device/kernel_shapes.h"

namespace tidepool {

// A device's kernels answer for themselves too (KernelQueries: workspace,
// saved and mask sizes, layout, 16-bit support); the planner asks those
// answers through KernelQueries alone, so a plan for a device that is not
// here (a GPU profile) asks a device specification's answers instead.
class Kernels : public KernelQueries {
 public:
  // --- activation layout (kernel_shapes.h channel_blocked) ----------------
  // y = x from channel-blocked to NCHW order, and back (flatten's view of a
  // blocked tensor). Only tables whose channel_block() is non-zero have them.
  virtual void unblock_channels(const ChannelBlocks&, const float* x, float* y);
  virtual void block_channels(const ChannelBlocks&, const float* x, float* y);

  // --- convolution (depthwise is groups == c == k) ---------------------
  // x, y, dx, dy: of the shape's dtype; w, b, dw, db: f32.
  virtual void conv_forward(const ConvShape&, ConvScheme, const void* x, const float* w,
                            const float* b /* null unless bias */, void* y, void* workspace) = 0;
  virtual void conv_backward_data(const ConvShape&, ConvScheme, const void* dy, const float* w,
                                  void* dx, void* workspace) = 0;
  virtual void conv_backward_weights(const ConvShape&, ConvScheme, const void* x, const void* dy,
                                     float* dw, float* db /* null unless bias */,
                                     void* workspace) = 0;

  // --- batch normalisation (per channel; saved_mean/var are the batch's) ---
  // Training: normalise with batch statistics, write them to saved_* for
  // backward, and update the running statistics (unbiased variance).
  // x, y, dx, dy: of the shape's dtype; the per-channel values: f32.
  // With a fused ReLU (BatchNormShape::relu), forward_train also writes
  // the mask into `relu_mask` (batchnorm_relu_mask_bytes of it, about a bit
  // a value; null without a ReLU), and backward reads it in place of y, so
  // y need not be kept (or prefetched) for batch norm's backward.
  virtual void batchnorm_forward_train(const BatchNormShape&, const void* x, const float* gamma,
                                       const float* beta, void* y, float* saved_mean,
                                       float* saved_var, float* running_mean,
                                       float* running_var, void* relu_mask) = 0;
  virtual void batchnorm_forward_infer(const BatchNormShape&, const void* x, const float* gamma,
                                       const float* beta, const float* running_mean,
                                       const float* running_var, void* y) = 0;
  virtual void batchnorm_backward(const BatchNormShape&, const void* x, const void* dy,
                                  const float* gamma, const float* saved_mean,
                                  const float* saved_var, void* dx, float* dgamma,
                                  float* dbeta, const void* relu_mask) = 0;

  // --- batch normalisation over every rank's batch (--sync-bn) ------------
  // Each training pass in two halves with the per-channel sums all-reduced
  // between them (engine/layers/batchnorm.cpp). `sums` holds
  // batchnorm_sums_count(c) doubles, [c sums][c sums][the count]: this rank's
  // after a *_sums kernel, every rank's added up when a *_with_sums
  // kernel reads it. Doubles, so that E[x²] - E[x]² over a large global
  // batch keeps f32's precision.
  //
  // Forward: sums = (Σx, Σx², n·h·w) over this rank's x.
  virtual void batchnorm_sums(const BatchNormShape&, const float* x, double* sums) = 0;
  // Normalise with the statistics of the summed sums (mean and biased
  // variance over their count), write those to saved_*, and update the
  // running statistics with them (unbiased over the count), as
  // batchnorm_forward_train does with its own batch's.
  virtual void batchnorm_forward_with_sums(const BatchNormShape&, const float* x, const float* gamma,
                                           const float* beta, const double* sums, float* y,
                                           float* saved_mean, float* saved_var, float* running_mean,
                                           float* running_var) = 0;
  // Backward: sums = (Σdy, Σdy·x̂, n·h·w) over this rank's values, with x̂
  // normalised by saved_* (the summed statistics), and dgamma = Σdy·x̂,
  // dbeta = Σdy: this rank's parameter gradients, which the gradient
  // all-reduce then averages like any other.
  virtual void batchnorm_backward_sums(const BatchNormShape&, const float* x, const float* dy,
                                       const float* saved_mean, const float* saved_var, double* sums,
                                       float* dgamma, float* dbeta) = 0;
  // dx = gamma / σ · (dy - Σdy / N - x̂ · Σdy·x̂ / N), the sums and their
  // count N summed over the ranks.
  virtual void batchnorm_backward_with_sums(const BatchNormShape&, const float* x, const float* dy,
                                            const float* gamma, const float* saved_mean,
                                            const float* saved_var, const double* sums, float* dx) = 0;

  // --- relu (backward reads the forward output y) ----------------------
  // `count` values of `type`: f32, or bf16/f16 where takes_16bit().
  virtual void relu_forward(std::int64_t count, DType type, const void* x, void* y) = 0;
  virtual void relu_backward(std::int64_t count, DType type, const void* y, const void* dy, void* dx) = 0;

  // --- pooling -----------------------------------------------------------
  // Max pooling keeps what backward needs (e.g. argmax indices) in `saved`,
  // which lives from forward to backward (pool_saved_bytes of it).
  // x, y, dx, dy: of the shape's dtype.
  virtual void pool_forward(const PoolShape&, const void* x, void* y, void* saved) = 0;
  virtual void pool_backward(const PoolShape&, const void* x, const void* dy,
                             const void* saved, void* dx) = 0;

  // --- fully connected ---------------------------------------------------
  virtual void linear_forward(const LinearShape&, const float* x, const float* w, const float* b,
                              float* y) = 0;
  virtual void linear_backward_data(const LinearShape&, const float* dy, const float* w,
                                    float* dx) = 0;
  virtual void linear_backward_weights(const LinearShape&, const float* x, const float* dy,
                                       float* dw, float* db) = 0;

  // --- dropout -------------------------------------------------------------
  // Element i is kept with probability 1 - p, decided by a counter-based hash
  // of (seed, i) alone, so the mask is the same on every device and thread
  // count. Kept elements are scaled by 1 / (1 - p). mask holds 0 or 1/(1-p).
  virtual void dropout_forward(std::int64_t count, float p, std::uint64_t seed, const float* x,
                               float* y, float* mask) = 0;
  virtual void dropout_backward(std::int64_t count, const float* mask, const float* dy,
                                float* dx) = 0;
  // dropout_forward on a channel-blocked tensor: element i is still the
  // element's NCHW index, so the mask is the one an NCHW tensor draws, in
  // the blocked order. Only tables whose channel_block() is non-zero have it.
  virtual void dropout_forward_blocked(const ChannelBlocks&, float p, std::uint64_t seed, const float* x,
                                       float* y, float* mask);

  // --- elementwise -------------------------------------------------------
  // y = a + b, `count` values of `type`: f32, or bf16/f16 where takes_16bit().
  virtual void add_forward(std::int64_t count, DType type, const void* a, const void* b, void* y) = 0;
  // y = max(a + b, 0): the residual join with its ReLU fused (--fuse relu).
  virtual void add_relu_forward(std::int64_t count, DType type, const void* a, const void* b, void* y) = 0;
  virtual void copy(std::int64_t count, const float* x, float* y) = 0;
  // acc += x
  virtual void accumulate(std::int64_t count, const float* x, float* acc) = 0;

  // --- 16-bit storage (--precision bf16|fp16: engine/step_calls/f32_views.h) ---
  // y = x * scale, from one of f32, bf16 and f16 to another, rounded to
  // nearest even; a value beyond f16's range becomes ±inf (which is how
  // fp16's loss scaling finds that its scale is too large).
  virtual void convert(std::int64_t count, DType from, const void* x, DType to, void* y, float scale) = 0;
  // acc += x, both of 16-bit `type`: summed in f32 and rounded once.
  virtual void accumulate_16bit(std::int64_t count, DType type, const void* x, void* acc) = 0;

  // --- fp16's loss scaling (engine/run/loss_scaler.h) -------------------
  // y[i] = value.
  virtual void fill(std::int64_t count, float value, float* y) = 0;
  // g *= inv_scale, in place; where any g was NaN or ±inf, *overflow = 1
  // (it is never reset here: one flag gathers every gradient's).
  virtual void unscale_check(std::int64_t count, float* g, float inv_scale, float* overflow) = 0;

  // --- softmax cross-entropy, mean over the batch ----------------------
  // logits [n, classes], labels [n] (i32). Writes probabilities [n, classes]
  // for backward, loss_and_correct[0] = mean loss, [1] = the number of rows
  // whose label ranks first and [2] = those whose label ranks in the top 5
  // (a class ranks above the label when its logit is larger, or equal with
  // a smaller index: the first maximum wins ties).
  virtual void softmax_xent_forward(std::int64_t n, std::int64_t classes, const float* logits,
                                    const std::int32_t* labels, float* probs,
                                    float* loss_and_correct) = 0;
  virtual void softmax_xent_backward(std::int64_t n, std::int64_t classes, const float* probs,
                                     const std::int32_t* labels, float* dlogits) = 0;

  // --- optimiser: SGD with momentum and weight decay (PyTorch's form) ----
  // g = dw + weight_decay * w; v = momentum * v + g; w -= lr * v
  // unless `skip` (device memory; null: never) holds a non-zero value: then
  // w and v stay as they are (fp16's overflowed steps, unscale_check).
  virtual void sgd_update(std::int64_t count, float lr, float momentum, float weight_decay,
                          float* w, const float* dw, float* velocity, const float* skip) = 0;
};

}  // namespace tidepool
