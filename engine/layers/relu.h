// max(x, 0); backward reads the output (dx = dy where y > 0).
#pragma once

#include "engine/core/layer.h"

namespace tidepool {

class Relu final : public Layer {
 public:
  using Layer::Layer;
  std::string_view kind() const override { return "relu"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return true; }
  bool has_16bit_kernels() const override { return true; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;
};

}  // namespace tidepool
