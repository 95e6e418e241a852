#include "engine/layers/linear.h"

#include "engine/device/kernels.h"


namespace tidepool {

Linear::Linear(std::string name, std::int64_t out_features, bool bias)
    : Layer(std::move(name)), out_(out_features), bias_(bias) {
  if (out_ <= 0) fail("out_features must be positive");
  if (!bias_) fail("linear layers without bias are not supported by the kernel table");
}

LinearShape Linear::linear_shape(const Shape& x) const { return {x[0], x.numel() / x[0], out_}; }

Shape Linear::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1 || in[0].rank() != 2) fail("expects one [N, features] input (add a flatten)");
  return Shape{in[0][0], out_};
}

std::vector<ParamSpec> Linear::params(const std::vector<Shape>& in) const {
  const std::int64_t fan_in = in[0][1];
  return {{"weight", Shape{out_, fan_in}, ParamInit::uniform_fan_in, fan_in, out_},
          {"bias", Shape{out_}, ParamInit::uniform_fan_in, fan_in, out_}};
}

void Linear::forward(Kernels& k, const LayerArgs& a) const {
  k.linear_forward(linear_shape(a.input_shapes[0]), static_cast<const float*>(a.inputs[0]),
                   a.params[0], a.params[1], static_cast<float*>(a.output));
}

void Linear::backward(Kernels& k, const LayerArgs& a) const {
  const LinearShape s = linear_shape(a.input_shapes[0]);
  if (a.input_grads[0]) k.linear_backward_data(s, as_f32(a.output_grad), a.params[0], as_f32(a.input_grads[0]));
  k.linear_backward_weights(s, as_f32(a.inputs[0]), as_f32(a.output_grad),
                            a.param_grads[0], a.param_grads[1]);
}

double Linear::forward_flops(const std::vector<Shape>& in) const {
  const LinearShape s = linear_shape(in[0]);
  return 2.0 * s.n * s.in * s.out;
}

}  // namespace tidepool
