#include "engine/layers/softmax_xent.h"

#include "engine/device/kernels.h"

namespace tidepool {

Shape SoftmaxCrossEntropy::infer(const std::vector<Shape>& in) const {
  if (in.size() != 2 || in[0].rank() != 2) fail("expects logits [N, classes] and labels [N]");
  if (in[1].rank() != 1 || in[1][0] != in[0][0])
    fail("labels " + in[1].str() + " do not match logits " + in[0].str());
  return Shape{3};
}

std::vector<SavedSpec> SoftmaxCrossEntropy::saved(const std::vector<Shape>& in, std::int64_t, const KernelQueries&) const {
  return {{"probs", static_cast<std::size_t>(in[0].numel()) * sizeof(float)}};
}

void SoftmaxCrossEntropy::forward(Kernels& k, const LayerArgs& a) const {
  const Shape& logits = a.input_shapes[0];
  k.softmax_xent_forward(logits[0], logits[1], static_cast<const float*>(a.inputs[0]),
                         static_cast<const std::int32_t*>(a.inputs[1]),
                         static_cast<float*>(a.saved[0]), static_cast<float*>(a.output));
}

void SoftmaxCrossEntropy::backward(Kernels& k, const LayerArgs& a) const {
  const Shape& logits = a.input_shapes[0];
  k.softmax_xent_backward(logits[0], logits[1], static_cast<const float*>(a.saved[0]),
                          static_cast<const std::int32_t*>(a.inputs[1]), as_f32(a.input_grads[0]));
}

}  // namespace tidepool
