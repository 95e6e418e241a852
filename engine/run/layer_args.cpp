#include "engine/run/layer_args.h"

#include "engine/plan/f32_views.h"

namespace tidepool {

LayerCall layer_call(const Schedule& s, const Layer& layer, int node, bool forward, const TensorAddress& address) {
  const NodeTensors& nt = s.nodes[static_cast<std::size_t>(node)];
  auto fptr = [&](int t) { return reinterpret_cast<float*>(address(t)); };
  LayerCall c;
  c.layer = &layer;
  c.forward = forward;
  LayerArgs& a = c.args;
  for (int t : nt.inputs) {
    a.input_shapes.push_back(s.tensors[static_cast<std::size_t>(t)].info.shape);
    a.inputs.push_back(address(t));
  }
  a.output_shape = s.tensors[static_cast<std::size_t>(nt.output)].info.shape;
  a.output = address(nt.output);
  for (std::size_t j = 0; j < nt.params.size(); ++j) {
    a.params.push_back(fptr(nt.params[j]));
    a.param_grads.push_back(fptr(nt.param_grads[j]));
  }
  for (int t : nt.saved) a.saved.push_back(address(t));
  std::byte* workspace = address(forward ? nt.forward_workspace : nt.backward_workspace);
  a.workspace = workspace;
  if (!forward) {
    a.output_grad = fptr(nt.output_grad);
    for (int t : nt.input_grads) a.input_grads.push_back(fptr(t));
  }
  a.scheme = s.settings.memory.scheme;
  a.channel_block = s.channel_block;
  a.training = s.settings.phase == Phase::train;

  const F32Views views = f32_views(s, layer, node, forward);
  if (views.views.empty()) return c;
  a.workspace = workspace + views.bytes;  // the layer's own, behind the copies
  for (const F32View& v : views.views) {
    const TensorInfo& info = s.tensors[static_cast<std::size_t>(v.tensor)].info;
    std::byte* copy = workspace + v.offset;
    c.copies.push_back({info.shape.numel(), info.dtype, address(v.tensor), copy, v.widen, v.round});
    float* f = reinterpret_cast<float*>(copy);
    switch (v.arg) {
      case F32View::Arg::input: a.inputs[static_cast<std::size_t>(v.index)] = f; break;
      case F32View::Arg::output: a.output = f; break;
      case F32View::Arg::output_grad: a.output_grad = f; break;
      case F32View::Arg::input_grad: a.input_grads[static_cast<std::size_t>(v.index)] = f; break;
    }
  }
  return c;
}

void run(Kernels& k, const LayerCall& call) {
  for (const F32Copy& c : call.copies)
    if (c.widen) k.convert(c.count, c.type, c.stored, DType::f32, c.copy, 1.0f);
  if (call.forward)
    call.layer->forward(k, call.args);
  else
    call.layer->backward(k, call.args);
  for (const F32Copy& c : call.copies)
    if (c.round) k.convert(c.count, DType::f32, c.copy, c.type, c.stored, 1.0f);
}

std::vector<TrainableParam> trainable_params(const Schedule& s) {
  std::vector<TrainableParam> params;
  for (const NodeTensors& nt : s.nodes)
    for (std::size_t j = 0; j < nt.params.size(); ++j)
      if (nt.param_grads[j] >= 0)
        params.push_back({s.tensors[static_cast<std::size_t>(nt.params[j])].info.shape.numel(), nt.params[j],
                          nt.param_grads[j], nt.momenta[j]});
  return params;
}

}  // namespace tidepool
