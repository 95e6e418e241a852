#include "engine/layers/conv2d.h"

#include <algorithm>

#include "engine/device/kernels.h"

namespace tidepool {

Conv2d::Conv2d(std::string name, Conv2dOptions options) : Layer(std::move(name)), options_(options) {
  if (options_.out_channels <= 0 || options_.kernel <= 0 || options_.stride <= 0 ||
      options_.padding < 0 || options_.dilation <= 0 || options_.groups <= 0)
    fail("channels, kernel, stride, dilation and groups must be positive and padding >= 0");
}

ConvShape Conv2d::conv_shape(const Shape& x, std::int64_t channel_block, DType dtype) const {
  ConvShape s;
  s.channel_block = channel_block;
  s.dtype = dtype;
  s.n = x[0], s.c = x[1], s.h = x[2], s.w = x[3];
  s.k = options_.out_channels;
  s.r = s.s = options_.kernel;
  s.stride_h = s.stride_w = options_.stride;
  s.pad_h = s.pad_w = options_.padding;
  s.dil_h = s.dil_w = options_.dilation;
  s.groups = options_.depthwise ? s.c : options_.groups;
  s.bias = options_.bias;
  return s;
}

Shape Conv2d::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1 || in[0].rank() != 4) fail("expects one NCHW input");
  ConvShape s = conv_shape(in[0]);
  if (options_.depthwise && s.k != s.c)
    fail("depthwise needs out_channels == in_channels (" + std::to_string(s.c) + ")");
  if (s.c % s.groups || s.k % s.groups)
    fail("channels (" + std::to_string(s.c) + " in, " + std::to_string(s.k) +
         " out) must divide by groups " + std::to_string(s.groups));
  if (s.out_h() <= 0 || s.out_w() <= 0)
    fail("input " + in[0].str() + " is smaller than the kernel");
  return Shape{s.n, s.k, s.out_h(), s.out_w()};
}

std::vector<ParamSpec> Conv2d::params(const std::vector<Shape>& in) const {
  ConvShape s = conv_shape(in[0]);
  const std::int64_t fan_in = (s.c / s.groups) * s.r * s.s;
  const std::int64_t fan_out = (s.k / s.groups) * s.r * s.s;
  std::vector<ParamSpec> p{{"weight", Shape{s.k, s.c / s.groups, s.r, s.s},
                            ParamInit::kaiming_normal_fan_out, fan_in, fan_out}};
  if (s.bias) p.push_back({"bias", Shape{s.k}, ParamInit::uniform_fan_in, fan_in, fan_out});
  return p;
}

std::size_t Conv2d::workspace_bytes(const std::vector<Shape>& in, Pass pass, ConvScheme scheme,
                                    std::int64_t channel_block, DType dtype, const KernelQueries& k) const {
  const ConvShape s = conv_shape(in[0], channel_block, dtype);
  if (pass == Pass::forward) return k.conv_workspace_bytes(s, scheme, ConvPass::forward);
  // Backward-data and backward-weights run one after the other and share it.
  return std::max(k.conv_workspace_bytes(s, scheme, ConvPass::backward_data),
                  k.conv_workspace_bytes(s, scheme, ConvPass::backward_weights));
}

void Conv2d::forward(Kernels& k, const LayerArgs& a) const {
  const ConvShape s = conv_shape(a.input_shapes[0], a.channel_block, a.dtype);
  k.conv_forward(s, a.scheme, a.inputs[0], a.params[0], s.bias ? a.params[1] : nullptr, a.output, a.workspace);
}

void Conv2d::backward(Kernels& k, const LayerArgs& a) const {
  const ConvShape s = conv_shape(a.input_shapes[0], a.channel_block, a.dtype);
  if (a.input_grads[0]) k.conv_backward_data(s, a.scheme, a.output_grad, a.params[0], a.input_grads[0], a.workspace);
  k.conv_backward_weights(s, a.scheme, a.inputs[0], a.output_grad, a.param_grads[0], s.bias ? a.param_grads[1] : nullptr,
                          a.workspace);
}

double Conv2d::forward_flops(const std::vector<Shape>& in) const { return conv_shape(in[0]).flops(); }

}  // namespace tidepool
