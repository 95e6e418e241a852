#include "engine/run/layer_args.h"

namespace tidepool {

LayerArgs layer_args(const Schedule& s, int node, bool forward, const TensorAddress& address) {
  const NodeTensors& nt = s.nodes[static_cast<std::size_t>(node)];
  auto fptr = [&](int t) { return reinterpret_cast<float*>(address(t)); };
  LayerArgs a;
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
  a.workspace = address(forward ? nt.forward_workspace : nt.backward_workspace);
  if (!forward) {
    a.output_grad = fptr(nt.output_grad);
    for (int t : nt.input_grads) a.input_grads.push_back(fptr(t));
  }
  a.scheme = s.settings.memory.scheme;
  a.training = s.settings.phase == Phase::train;
  return a;
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
