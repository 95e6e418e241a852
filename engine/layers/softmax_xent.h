// Softmax followed by cross-entropy against integer labels, averaged over
// the batch. Inputs: logits [N, classes], labels [N] (i32). Output: three
// floats, the mean loss and the numbers of top-1 and top-5 correct predictions.
#pragma once

#include "engine/core/layer.h"

namespace tidepool {

class SoftmaxCrossEntropy final : public Layer {
 public:
  using Layer::Layer;
  std::string_view kind() const override { return "softmax_xent"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  bool input_is_index(int i) const override { return i == 1; }
  // The probabilities, for backward.
  std::vector<SavedSpec> saved(const std::vector<Shape>& inputs, std::int64_t channel_block,
                               const KernelQueries&) const override;
  bool backward_reads_input(int i) const override { return i == 1; }  // the labels
  bool backward_reads_output() const override { return false; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;
};

}  // namespace tidepool
