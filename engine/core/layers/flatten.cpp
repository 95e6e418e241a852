#include "engine/core/layers/flatten.h"

namespace tidepool {

Shape Flatten::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1 || in[0].rank() < 2) fail("expects one input of rank >= 2");
  return Shape{in[0][0], in[0].numel() / in[0][0]};
}

void Flatten::forward(Kernels& k, const LayerArgs& a) const {
  k.copy(a.output_shape.numel(), static_cast<const float*>(a.inputs[0]),
         static_cast<float*>(a.output));
}

void Flatten::backward(Kernels& k, const LayerArgs& a) const {
  if (a.input_grads[0]) k.copy(a.output_shape.numel(), a.output_grad, a.input_grads[0]);
}

}  // namespace tidepool
