#include "engine/perf/step_work.h"

#include <cstdint>

#include "engine/step_calls/bucket_call.h"
#include "engine/step_calls/layer_args.h"

namespace tidepool {

namespace {
// A null pointer means "no such tensor" to a layer (an input that needs no
// gradient), so every tensor a step has gets an address of its own, as in
// a real run; the counter never reads them.
std::byte* placeholder(int t) {
  return t < 0 ? nullptr : reinterpret_cast<std::byte*>(std::uintptr_t{4096} * (static_cast<std::uintptr_t>(t) + 1));
}
}  // namespace

Work step_work(const Network& network, const Schedule& s, int step, WorkCounter& counter) {
  const Step& st = s.steps[static_cast<std::size_t>(step)];
  counter.take();
  switch (st.kind) {
    case StepKind::forward:
    case StepKind::recompute:
    case StepKind::backward: {
      const bool forward = st.kind != StepKind::backward;
      const Layer& layer = *network.nodes()[static_cast<std::size_t>(st.node)].layer;
      LayerCall call = layer_call(s, layer, st.node, forward, placeholder);
      call.args.recompute = st.kind == StepKind::recompute;
      if (!call.rank_sums) {
        run(counter, call);
        break;
      }
      // --sync-bn: both parts' kernels (the all-reduce between them is the
      // network's, on the comm stream, as a bucket's is).
      for (PassPart part : {PassPart::sums, PassPart::rest}) {
        call.args.part = part;
        run(counter, call);
      }
      break;
    }
    case StepKind::accumulate: {
      const TensorInfo& info = s.tensors[static_cast<std::size_t>(st.tensor)].info;
      if (info.dtype == DType::f32)
        counter.accumulate(info.shape.numel(), nullptr, nullptr);
      else
        counter.accumulate_16bit(info.shape.numel(), info.dtype, nullptr, nullptr);
      break;
    }
    case StepKind::update:
      run(counter, update_call(s, {}, 1.0f, placeholder));
      break;
    // Data-parallel: the bucket's pack and unpack on the compute stream
    // (its all-reduce, on the comm stream, is the network's, not a kernel).
    case StepKind::all_reduce:
      pack(counter, bucket_call(s, st.source, placeholder));
      break;
    case StepKind::wait_all_reduce:
      unpack(counter, bucket_call(s, st.source, placeholder));
      break;
    default: break;
  }
  return counter.take();
}

}  // namespace tidepool
