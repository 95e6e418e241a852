// What a compute step asks of a device, as the performance model sees it
// (AccUDNN §3.2, "static information"): the class of work, its
// floating-point operations and how many kernels it launches. A step's work
// is found by calling its layer with a WorkCounter as the kernel table, so
// that the static analysis, the profiler and the sim device all count the
// same calls the real kernels get.
//
//   WorkCounter counter(cpu_kernels);          // workspace queries go to cpu_kernels
//   layer.forward(counter, args);               // pointers may be null: nothing is computed
//   Work w = counter.take();                    // {conv_forward, 2·MACs, 1 kernel}
//
// FLOPs are counted as AccUDNN counts them for convolution and linear
// layers (2 per multiply-add, eq. 1); every other kernel counts one per
// element it writes (for a memory-bound kernel the count only has to be
// proportional to its work: the model fits each class separately).
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/choices.h"
#include "engine/device/kernels.h"

namespace tidepool {

// The layer types AccUDNN fits separately (Fig. 5), by pass. Depthwise
// convolutions are a class of their own: per FLOP they run an order of
// magnitude slower than dense ones.
enum class WorkClass : std::uint8_t {
  conv_forward,
  conv_backward,  // data and weights
  depthwise_forward,
  depthwise_backward,
  batchnorm_forward,
  batchnorm_backward,
  relu_forward,
  relu_backward,
  pool_forward,
  pool_backward,
  linear_forward,
  linear_backward,
  dropout_forward,
  dropout_backward,
  add,         // residual sums
  copy,        // fan-out and flatten copies
  accumulate,  // a fan-out tensor's second gradient
  softmax_forward,
  softmax_backward,
  update,  // SGD over the parameters
};
inline constexpr Choice<WorkClass> kWorkClasses[] = {
    {WorkClass::conv_forward, "conv.forward", ""},
    {WorkClass::conv_backward, "conv.backward", ""},
    {WorkClass::depthwise_forward, "depthwise.forward", ""},
    {WorkClass::depthwise_backward, "depthwise.backward", ""},
    {WorkClass::batchnorm_forward, "batchnorm.forward", ""},
    {WorkClass::batchnorm_backward, "batchnorm.backward", ""},
    {WorkClass::relu_forward, "relu.forward", ""},
    {WorkClass::relu_backward, "relu.backward", ""},
    {WorkClass::pool_forward, "pool.forward", ""},
    {WorkClass::pool_backward, "pool.backward", ""},
    {WorkClass::linear_forward, "linear.forward", ""},
    {WorkClass::linear_backward, "linear.backward", ""},
    {WorkClass::dropout_forward, "dropout.forward", ""},
    {WorkClass::dropout_backward, "dropout.backward", ""},
    {WorkClass::add, "add", ""},
    {WorkClass::copy, "copy", ""},
    {WorkClass::accumulate, "accumulate", ""},
    {WorkClass::softmax_forward, "softmax.forward", ""},
    {WorkClass::softmax_backward, "softmax.backward", ""},
    {WorkClass::update, "update", ""},
};
constexpr std::span<const Choice<WorkClass>> choices(WorkClass) { return kWorkClasses; }
inline constexpr int kWorkClassCount = static_cast<int>(std::size(kWorkClasses));

struct Work {
  WorkClass work_class = WorkClass::copy;
  double flops = 0;
  int kernels = 0;  // 0: the step launched nothing (a flatten of a contiguous tensor)
  // What the kernel that set the class computed on: f32, or the 16-bit
  // type of a step that computes in 16 bits itself
  // (KernelQueries::takes_16bit): on a GPU, tensor cores for convolutions
  // and half the bytes for the memory-bound classes (PerfModel::compute_us).
  DType dtype = DType::f32;
  bool operator==(const Work&) const = default;
};

// A kernel table that computes nothing and counts: the class of the first
// kernel a step calls (a step is one layer's pass, so its kernels share a
// class), the FLOPs of all of them and their number. Size queries
// (workspace, max-pool's saved bytes, layout, 16-bit support) go to
// `queries`, the answers of the device counted for (KernelQueries), so that
// a plan made with a counter places what that device would.
class WorkCounter final : public Kernels {
 public:
  explicit WorkCounter(const KernelQueries& queries) : queries_(queries) {}

  // The work counted since the last take(), and a fresh count.
  Work take() {
    Work w = work_;
    work_ = {};
    classed_ = false;
    return w;
  }

  std::size_t conv_workspace_bytes(const ConvShape& s, ConvScheme scheme, ConvPass pass) const override {
    return queries_.conv_workspace_bytes(s, scheme, pass);
  }
  std::size_t pool_saved_bytes(const PoolShape& s) const override { return queries_.pool_saved_bytes(s); }
  // Which steps need f32 copies is the queried device's answer too.
  bool takes_16bit(DType type) const override { return queries_.takes_16bit(type); }
  std::string refuses_16bit(DType type) const override { return queries_.refuses_16bit(type); }
  // The layout too: a plan made with a counter keeps activations as the
  // queried device does, and so counts its layout conversions.
  std::int64_t channel_block() const override { return queries_.channel_block(); }
  void unblock_channels(const ChannelBlocks& b, const float*, float*) override {
    add(WorkClass::copy, static_cast<double>(b.n * b.c * b.hw));
  }
  void block_channels(const ChannelBlocks& b, const float*, float*) override {
    add(WorkClass::copy, static_cast<double>(b.n * b.c * b.hw));
  }
  void dropout_forward_blocked(const ChannelBlocks& b, float, std::uint64_t, const float*, float*, float*) override {
    add(WorkClass::dropout_forward, static_cast<double>(b.n * b.c * b.hw));
  }

  void conv_forward(const ConvShape& s, ConvScheme, const void*, const float*, const float*, void*, void*) override;
  void conv_backward_data(const ConvShape& s, ConvScheme, const void*, const float*, void*, void*) override;
  void conv_backward_weights(const ConvShape& s, ConvScheme, const void*, const void*, float*, float*,
                             void*) override;
  // A fused ReLU (BatchNormShape::relu, add_relu_forward) rides in the
  // pass it is fused into: it counts as that pass's work, as it costs no
  // sweep of its own.
  std::size_t batchnorm_relu_mask_bytes(const BatchNormShape& s) const override {
    return queries_.batchnorm_relu_mask_bytes(s);
  }
  void batchnorm_forward_train(const BatchNormShape& s, const void*, const float*, const float*, void*, float*,
                               float*, float*, float*, void*) override;
  void batchnorm_forward_infer(const BatchNormShape& s, const void*, const float*, const float*, const float*,
                               const float*, void*) override;
  void batchnorm_backward(const BatchNormShape& s, const void*, const void*, const float*, const float*,
                          const float*, void*, float*, float*, const void*) override;
  // --sync-bn's halves: each does about half of what the fused pass does
  // (a statistics pass; a normalising or dx pass), so each counts half its
  // elements, and the pair costs a fused pass and one launch more.
  void batchnorm_sums(const BatchNormShape& s, const float*, double*) override;
  void batchnorm_forward_with_sums(const BatchNormShape& s, const float*, const float*, const float*, const double*,
                                   float*, float*, float*, float*, float*) override;
  void batchnorm_backward_sums(const BatchNormShape& s, const float*, const float*, const float*, const float*,
                               double*, float*, float*) override;
  void batchnorm_backward_with_sums(const BatchNormShape& s, const float*, const float*, const float*, const float*,
                                    const float*, const double*, float*) override;
  void relu_forward(std::int64_t count, DType type, const void*, void*) override {
    add(WorkClass::relu_forward, count, type);
  }
  void relu_backward(std::int64_t count, DType type, const void*, const void*, void*) override {
    add(WorkClass::relu_backward, count, type);
  }
  void pool_forward(const PoolShape& s, const void*, void*, void*) override;
  void pool_backward(const PoolShape& s, const void*, const void*, const void*, void*) override;
  void linear_forward(const LinearShape& s, const float*, const float*, const float*, float*) override;
  void linear_backward_data(const LinearShape& s, const float*, const float*, float*) override;
  void linear_backward_weights(const LinearShape& s, const float*, const float*, float*, float*) override;
  void dropout_forward(std::int64_t count, float, std::uint64_t, const float*, float*, float*) override {
    add(WorkClass::dropout_forward, count);
  }
  void dropout_backward(std::int64_t count, const float*, const float*, float*) override {
    add(WorkClass::dropout_backward, count);
  }
  void add_forward(std::int64_t count, DType type, const void*, const void*, void*) override {
    add(WorkClass::add, count, type);
  }
  void add_relu_forward(std::int64_t count, DType type, const void*, const void*, void*) override {
    add(WorkClass::add, count, type);
  }
  void copy(std::int64_t count, const float*, float*) override { add(WorkClass::copy, count); }
  void accumulate(std::int64_t count, const float*, float*) override { add(WorkClass::accumulate, count); }
  // The f32 copies around a 16-bit step (engine/step_calls/f32_views.h) add to its
  // work but leave it the class of what it computes.
  void convert(std::int64_t count, DType, const void*, DType, void*, float) override {
    add(WorkClass::copy, static_cast<double>(count), DType::f32, false);
  }
  void accumulate_16bit(std::int64_t count, DType type, const void*, void*) override {
    add(WorkClass::accumulate, static_cast<double>(count), type);
  }
  void softmax_xent_forward(std::int64_t n, std::int64_t classes, const float*, const std::int32_t*, float*,
                            float*) override {
    add(WorkClass::softmax_forward, static_cast<double>(n) * classes);
  }
  void softmax_xent_backward(std::int64_t n, std::int64_t classes, const float*, const std::int32_t*,
                             float*) override {
    add(WorkClass::softmax_backward, static_cast<double>(n) * classes);
  }
  // fp16's unscaling is part of the update's work.
  void fill(std::int64_t count, float, float*) override {
    add(WorkClass::update, static_cast<double>(count), DType::f32, false);
  }
  void unscale_check(std::int64_t count, float*, float, float*) override {
    add(WorkClass::update, static_cast<double>(count));
  }
  void sgd_update(std::int64_t count, float, float, float, float*, const float*, float*, const float*) override {
    add(WorkClass::update, count);
  }

 private:
  void add(WorkClass c, double flops, DType type = DType::f32, bool sets_class = true) {
    if (sets_class && !classed_) {
      work_.work_class = c;
      work_.dtype = type;
    }
    classed_ = classed_ || sets_class;
    work_.flops += flops;
    ++work_.kernels;
  }

  const KernelQueries& queries_;
  Work work_;
  bool classed_ = false;  // a kernel that sets the class has been counted
};

}  // namespace tidepool
