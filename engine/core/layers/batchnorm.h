// Batch normalisation over N, H, W per channel, with running statistics.
#pragma once

#include "engine/core/layer.h"

namespace tidepool {

class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(std::string name, float eps = 1e-5f, float momentum = 0.1f)
      : Layer(std::move(name)), eps_(eps), momentum_(momentum) {}

  std::string_view kind() const override { return "batchnorm"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  // weight (gamma), bias (beta), then the running statistics (not trainable).
  std::vector<ParamSpec> params(const std::vector<Shape>& inputs) const override;
  // The batch mean and variance, for backward.
  std::vector<SavedSpec> saved(const std::vector<Shape>& inputs, std::int64_t channel_block,
                               Kernels&) const override;
  bool backward_reads_input(int) const override { return true; }
  bool backward_reads_output() const override { return false; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;

 private:
  BatchNormShape bn_shape(const Shape& x, std::int64_t channel_block = 0) const;
  float eps_, momentum_;
};

}  // namespace tidepool
