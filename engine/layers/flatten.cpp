#include "engine/layers/flatten.h"

#include "engine/device/kernels.h"

namespace tidepool {

Shape Flatten::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1 || in[0].rank() < 2) fail("expects one input of rank >= 2");
  return Shape{in[0][0], in[0].numel() / in[0][0]};
}

namespace {

// A channel-blocked input (kernels.h) is not in the NCHW order the
// flattened [n, c*h*w] rows mean, unless each image is c values (h = w = 1,
// after a global pool), where the two orders coincide.
bool needs_reorder(const Shape& x, std::int64_t block) {
  return x.rank() == 4 && channel_blocked(x[1], block) && x[2] * x[3] > 1;
}

ChannelBlocks blocks_of(const Shape& x, std::int64_t block) { return {x[0], x[1], x[2] * x[3], block}; }

}  // namespace

void Flatten::forward(Kernels& k, const LayerArgs& a) const {
  const Shape& x = a.input_shapes[0];
  const auto* in = static_cast<const float*>(a.inputs[0]);
  auto* out = static_cast<float*>(a.output);
  if (needs_reorder(x, a.channel_block))
    k.unblock_channels(blocks_of(x, a.channel_block), in, out);
  else
    k.copy(a.output_shape.numel(), in, out);
}

void Flatten::backward(Kernels& k, const LayerArgs& a) const {
  if (!a.input_grads[0]) return;
  const Shape& x = a.input_shapes[0];
  if (needs_reorder(x, a.channel_block))
    k.block_channels(blocks_of(x, a.channel_block), as_f32(a.output_grad), as_f32(a.input_grads[0]));
  else
    k.copy(a.output_shape.numel(), as_f32(a.output_grad), as_f32(a.input_grads[0]));
}

}  // namespace tidepool
