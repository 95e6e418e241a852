#include "engine/step_calls/f32_views.h"

namespace tidepool {
namespace {

constexpr std::size_t kViewAlign = 64;  // a cache line, as oneDNN wants its buffers

bool stored_16bit(const Schedule& s, int t) {
  return t >= 0 && is_16bit(s.tensors[static_cast<std::size_t>(t)].info.dtype);
}

}  // namespace

F32Views f32_views(const Schedule& s, const Layer& layer, int node, bool forward) {
  F32Views out;
  const NodeTensors& nt = s.nodes[static_cast<std::size_t>(node)];
  if (nt.computes_16bit) return out;  // its kernels take the 16-bit tensors
  auto add = [&](F32View::Arg arg, int index, int t, bool widen) {
    if (!stored_16bit(s, t)) return;
    out.views.push_back({arg, index, t, out.bytes, widen, !widen});
    const std::size_t bytes = static_cast<std::size_t>(s.tensors[static_cast<std::size_t>(t)].info.shape.numel()) * 4;
    out.bytes += (bytes + kViewAlign - 1) / kViewAlign * kViewAlign;
  };
  for (std::size_t j = 0; j < nt.inputs.size(); ++j) {
    const int i = static_cast<int>(j);
    if (forward || layer.backward_reads_input(i)) add(F32View::Arg::input, i, nt.inputs[j], true);
  }
  if (forward) {
    add(F32View::Arg::output, 0, nt.output, false);
    return out;
  }
  if (layer.backward_reads_output()) add(F32View::Arg::output, 0, nt.output, true);
  add(F32View::Arg::output_grad, 0, nt.output_grad, true);
  for (std::size_t j = 0; j < nt.input_grads.size(); ++j)
    add(F32View::Arg::input_grad, static_cast<int>(j), nt.input_grads[j], false);
  return out;
}

}  // namespace tidepool
