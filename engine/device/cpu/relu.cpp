// ReLU on oneDNN's eltwise primitive, over a flat run of `count` values
// (f32, or bf16 where the table takes it).
//
// The algorithm is eltwise_relu_use_dst_for_bwd: backward reads the forward
// output y instead of the input x. y > 0 exactly where x > 0, so the
// gradient is the same, and the executor can then drop x after forward
// (often it is a batch-norm output nobody else needs) and keep only y,
// which the next layer holds anyway.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/onednn_util.h"

namespace tidepool {
namespace {

using namespace onednn;

struct ReluPrimitives final : CacheEntry {
  dnnl::primitive_desc hint;  // backward's descriptor points at it; dies last
  dnnl::primitive forward, backward;
  OwnedScratchpad forward_scratch, backward_scratch;
};

memory::desc data_desc(std::int64_t count, DType type) { return memory::desc({count}, data_type(type), Tag::x); }

ReluPrimitives& primitives(Context& ctx, std::int64_t count, DType type) {
  const CacheKey key = {static_cast<std::int64_t>(Op::relu), count, static_cast<std::int64_t>(type)};
  return ctx.entry<ReluPrimitives>(key, [&] {
    if (count <= 0) throw std::invalid_argument("relu: count " + std::to_string(count));
    const memory::desc data = data_desc(count, type);
    const dnnl::primitive_attr attr = user_scratchpad();
    const algorithm alg = algorithm::eltwise_relu_use_dst_for_bwd;
    const dnnl::eltwise_forward::primitive_desc fwd(
        dnnl::eltwise_forward::desc(prop_kind::forward_training, alg, data, 0.0f, 0.0f), attr,
        ctx.engine);
    const dnnl::eltwise_backward::primitive_desc bwd(
        dnnl::eltwise_backward::desc(alg, data, data, 0.0f, 0.0f), attr, ctx.engine, fwd);
    auto e = std::make_unique<ReluPrimitives>();
    e->hint = fwd;
    e->forward = dnnl::eltwise_forward(fwd);
    e->backward = dnnl::eltwise_backward(bwd);
    e->forward_scratch.reset(fwd.scratchpad_desc(), ctx.engine);
    e->backward_scratch.reset(bwd.scratchpad_desc(), ctx.engine);
    return e;
  });
}

void run_with(Context& ctx, const dnnl::primitive& prim, OwnedScratchpad& scratch,
              std::unordered_map<int, memory> args) {
  std::lock_guard<std::mutex> lock(scratch.mutex());
  scratch.add_arg(args);
  ctx.run(prim, std::move(args));
}

}  // namespace

void CpuKernels::relu_forward(std::int64_t count, DType type, const void* x, void* y) {
  require_activation_type(type, "relu_forward");
  if (count == 0) return;
  ReluPrimitives& p = primitives(*ctx_, count, type);
  const memory::desc data = data_desc(count, type);
  run_with(
      *ctx_, p.forward, p.forward_scratch,
      {{DNNL_ARG_SRC, wrap(data, ctx_->engine, x)}, {DNNL_ARG_DST, wrap(data, ctx_->engine, y)}});
}

void CpuKernels::relu_backward(std::int64_t count, DType type, const void* y, const void* dy, void* dx) {
  require_activation_type(type, "relu_backward");
  if (count == 0) return;
  ReluPrimitives& p = primitives(*ctx_, count, type);
  const memory::desc data = data_desc(count, type);
  run_with(*ctx_, p.backward, p.backward_scratch,
           {{DNNL_ARG_DST, wrap(data, ctx_->engine, y)},
            {DNNL_ARG_DIFF_DST, wrap(data, ctx_->engine, dy)},
            {DNNL_ARG_DIFF_SRC, wrap(data, ctx_->engine, dx)}});
}

}  // namespace tidepool
