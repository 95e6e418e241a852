#include "engine/step_calls/layer_args.h"

#include <stdexcept>

#include "engine/step_calls/f32_views.h"

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
    a.output_grad = address(nt.output_grad);
    for (int t : nt.input_grads) a.input_grads.push_back(address(t));
  }
  if (nt.computes_16bit) a.dtype = s.tensors[static_cast<std::size_t>(nt.output)].info.dtype;
  a.scheme = s.settings.memory.scheme;
  a.channel_block = s.channel_block;
  a.training = s.settings.phase == Phase::train;

  // The workspace: [f32 views][rank sums][the layer's own].
  const F32Views views = f32_views(s, layer, node, forward);
  c.rank_sums = forward ? nt.forward_rank_sums : nt.backward_rank_sums;
  if (c.rank_sums) {
    a.rank_sums = reinterpret_cast<double*>(workspace + views.bytes);
    a.workspace = workspace + views.bytes + rank_sums_bytes(c.rank_sums);
  }
  if (views.views.empty()) return c;
  if (!c.rank_sums) a.workspace = workspace + views.bytes;  // the layer's own, behind the copies
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

void scale_loss_gradient(LayerCall& call, float scale) {
  bool scaled = false;
  for (F32Copy& c : call.copies)
    if (c.round && c.copy == static_cast<void*>(call.args.input_grads.empty() ? nullptr : call.args.input_grads[0])) {
      c.scale = scale;
      scaled = true;
    }
  if (!scaled) throw std::logic_error("the loss scale has no 16-bit gradient to scale in " + call.layer->name());
}

void run(Kernels& k, const LayerCall& call) {
  // A pass in parts widens before its first part and rounds after its
  // last: the f32 copies stay in the workspace in between.
  const PassPart part = call.args.part;
  if (part != PassPart::rest)
    for (const F32Copy& c : call.copies)
      if (c.widen) k.convert(c.count, c.type, c.stored, DType::f32, c.copy, 1.0f);
  if (call.forward)
    call.layer->forward(k, call.args);
  else
    call.layer->backward(k, call.args);
  if (part != PassPart::sums)
    for (const F32Copy& c : call.copies)
      if (c.round) k.convert(c.count, DType::f32, c.copy, c.type, c.stored, c.scale);
}

UpdateCall update_call(const Schedule& s, const SgdOptions& sgd, float loss_scale, const TensorAddress& address) {
  auto fptr = [&](int t) { return reinterpret_cast<float*>(address(t)); };
  UpdateCall c;
  c.sgd = sgd;
  // A layer whose backward pass never runs (nothing it feeds reaches the
  // loss) has no gradient: its parameters stay as they are, as PyTorch's
  // SGD skips a parameter whose grad is None (its gradient buffer was
  // never written).
  for (const NodeTensors& nt : s.nodes)
    for (std::size_t j = 0; j < nt.params.size() && nt.runs_backward; ++j)
      if (nt.param_grads[j] >= 0)
        c.params.push_back({s.tensors[static_cast<std::size_t>(nt.params[j])].info.shape.numel(), fptr(nt.params[j]),
                            fptr(nt.param_grads[j]), fptr(nt.momenta[j])});
  if (s.overflow >= 0) {
    c.overflow = fptr(s.overflow);
    c.inv_scale = 1.0f / loss_scale;
  }
  return c;
}

void run(Kernels& k, const UpdateCall& call) {
  if (call.overflow) {
    k.fill(1, 0.0f, call.overflow);
    for (const UpdateCall::Param& p : call.params) k.unscale_check(p.count, p.dw, call.inv_scale, call.overflow);
  }
  for (const UpdateCall::Param& p : call.params)
    k.sgd_update(p.count, call.sgd.lr, call.sgd.momentum, call.sgd.weight_decay, p.w, p.dw, p.v, call.overflow);
}

}  // namespace tidepool
