// Batch normalisation over N, H, W per channel, with running statistics.
//
// In a data-parallel run each rank normalises with its own part of the
// batch, unless the schedule syncs the statistics (--sync-bn, as PyTorch's
// SyncBatchNorm): then each training pass runs in two parts (PassPart)
// around an all-reduce of per-channel sums, and normalises with the whole
// global batch's mean and variance.
//
// With a fused ReLU (--fuse relu: engine/core/fusion.h) the output is
// max(bn(x), 0), computed in the same pass (BatchNormShape::relu), and
// forward saves a mask of where the ReLU passed (about a bit a value:
// Kernels::batchnorm_relu_mask_bytes) that backward reads in place of y.
// It has no passes in parts: under --sync-bn batch norms stay unfused.
#pragma once

#include "engine/core/layer.h"
#include "engine/device/kernel_shapes.h"

namespace tidepool {

class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(std::string name, float eps = 1e-5f, float momentum = 0.1f, bool relu = false)
      : Layer(std::move(name)), eps_(eps), momentum_(momentum), relu_(relu) {}

  std::string_view kind() const override { return relu_ ? "batchnorm_relu" : "batchnorm"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  // weight (gamma), bias (beta), then the running statistics (not trainable).
  std::vector<ParamSpec> params(const std::vector<Shape>& inputs) const override;
  // The batch mean and variance, for backward, and a fused ReLU's mask
  // where the device keeps one.
  std::vector<SavedSpec> saved(const std::vector<Shape>& inputs, std::int64_t channel_block,
                               const KernelQueries&) const override;
  // --sync-bn: forward sums x and x², backward dy and dy·x̂, per channel,
  // with the count (batchnorm_sums_count). Throws std::invalid_argument
  // with a fused ReLU, which the --sync-bn kernels do not apply.
  std::size_t rank_sums(const std::vector<Shape>& inputs, Pass) const override;
  bool backward_reads_input(int) const override { return true; }
  bool backward_reads_output() const override { return false; }
  // The whole-pass kernels only: a pass in parts (--sync-bn) computes in
  // f32, and the planner gives it f32 copies.
  bool has_16bit_kernels() const override { return true; }
  std::unique_ptr<Layer> with_relu() const override;
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;

 private:
  BatchNormShape bn_shape(const Shape& x, std::int64_t channel_block = 0, DType dtype = DType::f32) const;
  float eps_, momentum_;
  bool relu_;
};

}  // namespace tidepool
