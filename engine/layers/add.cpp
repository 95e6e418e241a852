#include "engine/layers/add.h"

#include "engine/device/kernels.h"

namespace tidepool {

Shape Add::infer(const std::vector<Shape>& in) const {
  if (in.size() != 2) fail("expects two inputs");
  if (!(in[0] == in[1])) fail("input shapes differ: " + in[0].str() + " and " + in[1].str());
  return in[0];
}

std::unique_ptr<Layer> Add::with_relu() const { return relu_ ? nullptr : std::make_unique<Add>(name(), true); }

void Add::forward(Kernels& k, const LayerArgs& a) const {
  const std::int64_t count = a.output_shape.numel();
  if (relu_)
    k.add_relu_forward(count, a.dtype, a.inputs[0], a.inputs[1], a.output);
  else
    k.add_forward(count, a.dtype, a.inputs[0], a.inputs[1], a.output);
}

void Add::backward(Kernels& k, const LayerArgs& a) const {
  // d(a + b)/da = d(a + b)/db = 1: both inputs receive the output gradient,
  // through the ReLU's mask when one is fused: the first gets it from
  // relu_backward, the second a copy of the first's. (16-bit values are
  // copied as they are: a conversion to their own type copies.)
  const std::int64_t count = a.output_shape.numel();
  const void* grad = a.output_grad;
  for (void* dx : a.input_grads) {
    if (!dx) continue;
    if (relu_ && grad == a.output_grad) {
      k.relu_backward(count, a.dtype, a.output, a.output_grad, dx);
      grad = dx;
    } else if (a.dtype == DType::f32) {
      k.copy(count, as_f32(grad), as_f32(dx));
    } else {
      k.convert(count, a.dtype, grad, a.dtype, dx, 1.0f);
    }
  }
}

}  // namespace tidepool
