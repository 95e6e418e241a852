#include "engine/core/layers/add.h"

namespace tidepool {

Shape Add::infer(const std::vector<Shape>& in) const {
  if (in.size() != 2) fail("expects two inputs");
  if (!(in[0] == in[1])) fail("input shapes differ: " + in[0].str() + " and " + in[1].str());
  return in[0];
}

void Add::forward(Kernels& k, const LayerArgs& a) const {
  k.add_forward(a.output_shape.numel(), a.dtype, a.inputs[0], a.inputs[1], a.output);
}

void Add::backward(Kernels& k, const LayerArgs& a) const {
  // d(a + b)/da = d(a + b)/db = 1: both inputs receive the output gradient
  // (16-bit values as they are: a conversion to their own type copies).
  const std::int64_t count = a.output_shape.numel();
  for (void* dx : a.input_grads) {
    if (!dx) continue;
    if (a.dtype == DType::f32)
      k.copy(count, as_f32(a.output_grad), as_f32(dx));
    else
      k.convert(count, a.dtype, a.output_grad, a.dtype, dx, 1.0f);
  }
}

}  // namespace tidepool
