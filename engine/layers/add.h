// Elementwise sum of two tensors of one shape: the residual join. With a
// fused ReLU (--fuse relu: engine/core/fusion.h) the output is
// max(a + b, 0) in the same sweep, and backward reads it to pass no
// gradient where the ReLU cut.
#pragma once

#include "engine/core/layer.h"

namespace tidepool {

class Add final : public Layer {
 public:
  explicit Add(std::string name, bool relu = false) : Layer(std::move(name)), relu_(relu) {}
  std::string_view kind() const override { return relu_ ? "add_relu" : "add"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return relu_; }
  bool has_16bit_kernels() const override { return true; }
  std::unique_ptr<Layer> with_relu() const override;
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;

 private:
  bool relu_;
};

}  // namespace tidepool
