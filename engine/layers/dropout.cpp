#include "engine/layers/dropout.h"

#include "engine/device/kernels.h"

namespace tidepool {

Dropout::Dropout(std::string name, float p) : Layer(std::move(name)), p_(p) {
  if (!(p_ >= 0.0f && p_ < 1.0f)) fail("p must be in [0, 1)");
}

Shape Dropout::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1) fail("expects one input");
  return in[0];
}

std::vector<SavedSpec> Dropout::saved(const std::vector<Shape>& in, std::int64_t, const KernelQueries&) const {
  return {{"mask", static_cast<std::size_t>(in[0].numel()) * sizeof(float)}};
}

void Dropout::forward(Kernels& k, const LayerArgs& a) const {
  const std::int64_t count = a.output_shape.numel();
  const auto* x = static_cast<const float*>(a.inputs[0]);
  auto* y = static_cast<float*>(a.output);
  const Shape& in = a.input_shapes[0];
  // A channel-blocked input draws the mask of its NCHW indices (kernels.h).
  if (a.training && in.rank() == 4 && channel_blocked(in[1], a.channel_block))
    k.dropout_forward_blocked({in[0], in[1], in[2] * in[3], a.channel_block}, p_, a.seed, x, y,
                              static_cast<float*>(a.saved[0]));
  else if (a.training)
    k.dropout_forward(count, p_, a.seed, x, y, static_cast<float*>(a.saved[0]));
  else
    k.copy(count, x, y);  // evaluation keeps every unit (inverted dropout needs no rescale)
}

void Dropout::backward(Kernels& k, const LayerArgs& a) const {
  if (!a.input_grads[0]) return;
  k.dropout_backward(a.output_shape.numel(), static_cast<const float*>(a.saved[0]), as_f32(a.output_grad),
                     as_f32(a.input_grads[0]));
}

}  // namespace tidepool
