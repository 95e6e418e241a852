// Fully connected: y = x W^T + b, x is [N, in].
#pragma once

#include "engine/core/layer.h"
#include "engine/device/kernel_shapes.h"

namespace tidepool {

class Linear final : public Layer {
 public:
  Linear(std::string name, std::int64_t out_features, bool bias = true);

  std::string_view kind() const override { return "linear"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  std::vector<ParamSpec> params(const std::vector<Shape>& inputs) const override;
  bool backward_reads_input(int) const override { return true; }  // for dW
  bool backward_reads_output() const override { return false; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;
  double forward_flops(const std::vector<Shape>& inputs) const override;

 private:
  LinearShape linear_shape(const Shape& x) const;
  std::int64_t out_;
  bool bias_;
};

}  // namespace tidepool
