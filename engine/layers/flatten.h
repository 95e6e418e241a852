// [N, C, H, W] -> [N, C*H*W]. A copy, so that every tensor has one owner.
#pragma once

#include "engine/core/layer.h"

namespace tidepool {

class Flatten final : public Layer {
 public:
  using Layer::Layer;
  std::string_view kind() const override { return "flatten"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return false; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;
};

}  // namespace tidepool
