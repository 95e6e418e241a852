// Inverted dropout with a seeded, device-independent mask.
#pragma once

#include "engine/core/layer.h"

namespace tidepool {

class Dropout final : public Layer {
 public:
  Dropout(std::string name, float p);

  std::string_view kind() const override { return "dropout"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  // The mask (0 or 1/(1-p) per element).
  std::vector<SavedSpec> saved(const std::vector<Shape>& inputs, std::int64_t channel_block,
                               const KernelQueries&) const override;
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return false; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;

 private:
  float p_;
};

}  // namespace tidepool
