#include "engine/core/layers/batchnorm.h"

namespace tidepool {

BatchNormShape BatchNorm::bn_shape(const Shape& x, std::int64_t channel_block) const {
  BatchNormShape s;
  // A 2-D [n, c] input is never blocked (channel_blocked() is for 4-D ones).
  s.channel_block = x.rank() == 4 ? channel_block : 0;
  s.n = x[0], s.c = x[1];
  s.h = x.rank() == 4 ? x[2] : 1;
  s.w = x.rank() == 4 ? x[3] : 1;
  s.eps = eps_;
  s.momentum = momentum_;
  return s;
}

Shape BatchNorm::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1 || (in[0].rank() != 4 && in[0].rank() != 2))
    fail("expects one NCHW or NC input");
  return in[0];
}

std::vector<ParamSpec> BatchNorm::params(const std::vector<Shape>& in) const {
  const Shape c{in[0][1]};
  return {{"weight", c, ParamInit::ones},
          {"bias", c, ParamInit::zeros},
          {"running_mean", c, ParamInit::zeros, 1, 1, false},
          {"running_var", c, ParamInit::ones, 1, 1, false}};
}

std::vector<SavedSpec> BatchNorm::saved(const std::vector<Shape>& in, std::int64_t, Kernels&) const {
  const std::size_t bytes = static_cast<std::size_t>(in[0][1]) * sizeof(float);
  return {{"saved_mean", bytes}, {"saved_var", bytes}};
}

void BatchNorm::forward(Kernels& k, const LayerArgs& a) const {
  const BatchNormShape s = bn_shape(a.input_shapes[0], a.channel_block);
  const auto* x = static_cast<const float*>(a.inputs[0]);
  auto* y = static_cast<float*>(a.output);
  if (a.training)
    k.batchnorm_forward_train(s, x, a.params[0], a.params[1], y, static_cast<float*>(a.saved[0]),
                              static_cast<float*>(a.saved[1]), a.params[2], a.params[3]);
  else
    k.batchnorm_forward_infer(s, x, a.params[0], a.params[1], a.params[2], a.params[3], y);
}

void BatchNorm::backward(Kernels& k, const LayerArgs& a) const {
  const BatchNormShape s = bn_shape(a.input_shapes[0], a.channel_block);
  // batchnorm always produces dx: nothing upstream of a batchnorm is an input image.
  k.batchnorm_backward(s, static_cast<const float*>(a.inputs[0]), a.output_grad, a.params[0],
                       static_cast<const float*>(a.saved[0]), static_cast<const float*>(a.saved[1]),
                       a.input_grads[0], a.param_grads[0], a.param_grads[1]);
}

}  // namespace tidepool
