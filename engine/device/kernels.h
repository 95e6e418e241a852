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
// compute with them (convert; engine/plan/f32_views.h). Scratch memory is
// never allocated inside a kernel: a caller asks for the workspace size first, takes that many bytes from the
// arena and passes them in, which is what lets the planner see every byte.
//
// Backward kernels overwrite their outputs (dx, dw, db); gradient
// accumulation for fan-out tensors is an explicit `accumulate` call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/dtype.h"

namespace tidepool {

// vDNN's two convolution-algorithm schemes: `m` takes the algorithm with the
// least workspace, `p` the fastest one.
// (Its words are the settings': engine/plan/memory_settings.h.)
enum class ConvScheme : std::uint8_t { m, p };

// Activation layout. With a channel block b > 0, a 4-D activation (or its
// gradient) whose channel count b divides is stored [n][c/b][h][w][b]
// (oneDNN's nChw8c for b = 8): the layout the cpu device's convolutions,
// batch norms and poolings compute in, so nothing is reordered between
// layers. It takes the same bytes as NCHW (b divides c: no padding), so no
// memory figure depends on it. Every other tensor (the images, 2-D
// tensors, channel counts b does not divide) is dense NCHW. b = 0: every
// tensor is NCHW. A schedule takes b from its device's table
// (Kernels::channel_block()) and each layer passes it in its shapes.
inline bool channel_blocked(std::int64_t channels, std::int64_t block) {
  return block > 0 && channels % block == 0;
}

// A 4-D tensor seen by the layout conversions and blocked dropout.
struct ChannelBlocks {
  std::int64_t n = 1, c = 1, hw = 1;  // hw: height * width
  std::int64_t block = 0;
};
enum class ConvPass : std::uint8_t { forward, backward_data, backward_weights };

struct ConvShape {
  std::int64_t n = 1, c = 1, h = 1, w = 1;  // input
  std::int64_t k = 1, r = 1, s = 1;          // output channels, kernel height, width
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dil_h = 1, dil_w = 1;  // 1 = no dilation (PyTorch's convention)
  std::int64_t groups = 1;            // groups == c == k is a depthwise convolution
  bool bias = false;
  std::int64_t channel_block = 0;  // x (c channels) and y (k channels) as channel_blocked() says
  // What x, y, dx and dy are stored in: f32, or bf16/f16 on a table that
  // takes 16-bit activations. Weights, bias and their gradients are f32
  // (the master copy) whatever it says.
  DType dtype = DType::f32;

  std::int64_t out_h() const { return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1; }
  std::int64_t out_w() const { return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1; }
  // Weights are [k, c / groups, r, s].
  std::int64_t weight_numel() const { return k * (c / groups) * r * s; }
  double flops() const { return 2.0 * n * k * out_h() * out_w() * (c / groups) * r * s; }
};

struct BatchNormShape {
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  float eps = 1e-5f;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch
  std::int64_t channel_block = 0;  // x and y as channel_blocked(c, channel_block) says
  // x, y, dx and dy, as ConvShape::dtype; gamma, beta and the statistics
  // are f32. The --sync-bn kernels (*_sums) take f32 only.
  DType dtype = DType::f32;
  // A ReLU fused into the whole passes (--fuse relu): forward writes
  // y = max(bn(x), 0) and a mask of where y > 0, and backward
  // takes the gradient of that y and passes none outside the mask. The
  // --sync-bn kernels have no such form (engine/core/fusion.h leaves batch norms unfused under --sync-bn).
  bool relu = false;
};

// The doubles the --sync-bn kernels sum over the ranks for `channels`
// channels: two per channel and the count (Kernels::batchnorm_sums).
constexpr std::int64_t batchnorm_sums_count(std::int64_t channels) { return 2 * channels + 1; }

enum class PoolKind : std::uint8_t { max, avg };

struct PoolShape {
  PoolKind kind = PoolKind::max;
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  std::int64_t kh = 2, kw = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  std::int64_t channel_block = 0;  // x and y as channel_blocked(c, channel_block) says
  DType dtype = DType::f32;  // x, y, dx, dy, as ConvShape::dtype
  // Average pooling divides by the full window, padding included
  // (PyTorch's count_include_pad=True).
  std::int64_t out_h() const { return (h + 2 * pad_h - kh) / stride_h + 1; }
  std::int64_t out_w() const { return (w + 2 * pad_w - kw) / stride_w + 1; }
};

struct LinearShape {
  std::int64_t n = 1, in = 1, out = 1;  // y[n, out] = x[n, in] * W[out, in]^T + b[out]
};

// Throw std::invalid_argument naming the op and the shape when a shape
// cannot be computed (engine/device/kernel_shapes.cpp); every backend checks its
// inputs with these before it runs an op.
void validate(const ConvShape& s);
void validate(const BatchNormShape& s);
void validate(const PoolShape& s);
void validate(const LinearShape& s);
// Throws std::logic_error naming the op when `type` is not f32: what a
// table whose takes_16bit() is false says to a 16-bit call (a planner bug:
// such steps get f32 copies).
void require_f32(DType type, const char* op);
// True for the two 16-bit activation types, and for those and f32.
constexpr bool is_16bit(DType t) { return t == DType::bf16 || t == DType::f16; }
constexpr bool is_float(DType t) { return t == DType::f32 || is_16bit(t); }
// A 16-bit copy of a convolution's f32 weights, as a table that takes
// 16-bit activations keeps at the front of each pass's workspace (the
// cuda device: cuDNN wants the weights in the activations' type); 0 in f32.
// Rounded up to 256 bytes so that what follows it stays aligned.
std::size_t conv_weights_copy_bytes(const ConvShape& s);

class Kernels {
 public:
  virtual ~Kernels() = default;

  // --- 16-bit activations ---------------------------------------------------
  // True where convolution, batch norm (the whole-pass kernels), ReLU,
  // pooling and the residual add (the layers whose has_16bit_kernels() is
  // true) compute on activations of 16-bit `type` themselves (the cuda
  // device: cuDNN in the 16-bit type with f32 accumulation, and kernels of
  // its own), so a 16-bit step of theirs needs no f32 copies
  // (engine/plan/f32_views.h). Tables that take only f32 refuse any other
  // dtype with std::logic_error.
  virtual bool takes_16bit(DType type) const { return false; }

  // --- activation layout (channel_blocked above) --------------------------
  // The channel block this table's kernels compute fastest in; 0: NCHW.
  virtual std::int64_t channel_block() const { return 0; }
  // y = x from channel-blocked to NCHW order, and back (flatten's view of a
  // blocked tensor). Only tables whose channel_block() is non-zero have them.
  virtual void unblock_channels(const ChannelBlocks&, const float* x, float* y);
  virtual void block_channels(const ChannelBlocks&, const float* x, float* y);

  // --- convolution (depthwise is groups == c == k) ---------------------
  virtual std::size_t conv_workspace_bytes(const ConvShape&, ConvScheme, ConvPass) = 0;
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
  virtual std::size_t batchnorm_relu_mask_bytes(const BatchNormShape&) = 0;
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
  // between them (engine/core/layers/batchnorm.cpp). `sums` holds
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
  // which lives from forward to backward; its size is device-specific.
  virtual std::size_t pool_saved_bytes(const PoolShape&) = 0;
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

  // --- 16-bit storage (--precision bf16|fp16: engine/plan/f32_views.h) ---
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
