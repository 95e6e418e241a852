#include "engine/layers/relu.h"

#include "engine/device/kernels.h"

namespace tidepool {

Shape Relu::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1) fail("expects one input");
  return in[0];
}

void Relu::forward(Kernels& k, const LayerArgs& a) const {
  k.relu_forward(a.output_shape.numel(), a.dtype, a.inputs[0], a.output);
}

void Relu::backward(Kernels& k, const LayerArgs& a) const {
  if (!a.input_grads[0]) return;
  k.relu_backward(a.output_shape.numel(), a.dtype, a.output, a.output_grad, a.input_grads[0]);
}

}  // namespace tidepool
