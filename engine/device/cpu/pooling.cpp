// Max and average pooling on oneDNN, on NCHW or channel-blocked data
// (PoolShape::channel_block; x and y have the same channels, so the same
// layout), in f32 or, where the table takes it, bf16.
//
// Max pooling's `saved` buffer is oneDNN's training workspace: the position
// of the maximum inside each window (one byte per output element while the
// window has at most 256 taps), which is smaller than keeping x and lets
// backward scatter without re-searching the window. Average pooling needs
// nothing saved. Average pooling counts padded taps in the divisor
// (pooling_avg_include_padding), matching PyTorch's count_include_pad=True.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/onednn_util.h"

namespace tidepool {
namespace {

using namespace onednn;

struct PoolPrimitives final : CacheEntry {
  dnnl::primitive_desc hint;  // backward's descriptor points at it; dies last
  dnnl::primitive forward_train, forward_infer, backward;
  OwnedScratchpad train_scratch, infer_scratch, backward_scratch;
  memory::desc src, dst, saved;
  std::size_t saved_bytes = 0;
};

std::unique_ptr<PoolPrimitives> build(Context& ctx, const PoolShape& s) {
  validate(s);
  const algorithm alg =
      s.kind == PoolKind::max ? algorithm::pooling_max : algorithm::pooling_avg_include_padding;
  const memory::desc src = activation_desc(s.n, s.c, s.h, s.w, s.channel_block, s.dtype);
  const memory::desc dst = activation_desc(s.n, s.c, s.out_h(), s.out_w(), s.channel_block, s.dtype);
  const Dims strides = {s.stride_h, s.stride_w};
  const Dims kernel = {s.kh, s.kw};
  const Dims pad_l = {s.pad_h, s.pad_w};
  // The output size rounds down, so the far-side padding actually covered
  // by a window can be smaller than pad_l (negative when input rows are
  // never visited); oneDNN wants that effective amount.
  const Dims pad_r = {(s.out_h() - 1) * s.stride_h + s.kh - s.h - s.pad_h,
                      (s.out_w() - 1) * s.stride_w + s.kw - s.w - s.pad_w};
  const dnnl::primitive_attr attr = user_scratchpad();

  const dnnl::pooling_forward::primitive_desc train(
      dnnl::pooling_forward::desc(prop_kind::forward_training, alg, src, dst, strides, kernel,
                                  pad_l, pad_r),
      attr, ctx.engine);
  const dnnl::pooling_forward::primitive_desc infer(
      dnnl::pooling_forward::desc(prop_kind::forward_inference, alg, src, dst, strides, kernel,
                                  pad_l, pad_r),
      attr, ctx.engine);
  const dnnl::pooling_backward::primitive_desc bwd(
      dnnl::pooling_backward::desc(alg, src, dst, strides, kernel, pad_l, pad_r), attr, ctx.engine,
      train);

  auto e = std::make_unique<PoolPrimitives>();
  e->hint = train;
  e->forward_train = dnnl::pooling_forward(train);
  e->forward_infer = dnnl::pooling_forward(infer);
  e->backward = dnnl::pooling_backward(bwd);
  e->train_scratch.reset(train.scratchpad_desc(), ctx.engine);
  e->infer_scratch.reset(infer.scratchpad_desc(), ctx.engine);
  e->backward_scratch.reset(bwd.scratchpad_desc(), ctx.engine);
  e->src = src;
  e->dst = dst;
  e->saved = train.workspace_desc();
  e->saved_bytes = e->saved.get_size();
  return e;
}

PoolPrimitives& primitives(Context& ctx, const PoolShape& s) {
  const CacheKey key = {static_cast<std::int64_t>(Op::pool),
                        static_cast<std::int64_t>(s.kind),
                        s.n,
                        s.c,
                        s.h,
                        s.w,
                        s.kh,
                        s.kw,
                        s.stride_h,
                        s.stride_w,
                        s.pad_h,
                        s.pad_w,
                        s.channel_block,
                        static_cast<std::int64_t>(s.dtype)};
  return ctx.entry<PoolPrimitives>(key, [&] { return build(ctx, s); });
}

void run_with(Context& ctx, const dnnl::primitive& prim, OwnedScratchpad& scratch,
              std::unordered_map<int, memory> args) {
  std::lock_guard<std::mutex> lock(scratch.mutex());
  scratch.add_arg(args);
  ctx.run(prim, std::move(args));
}

}  // namespace

std::size_t CpuKernels::pool_saved_bytes(const PoolShape& s) const {
  require_activation_type(s.dtype, "pool_saved_bytes");
  return primitives(*ctx_, s).saved_bytes;
}

void CpuKernels::pool_forward(const PoolShape& s, const void* x, void* y, void* saved) {
  require_activation_type(s.dtype, "pool_forward");
  PoolPrimitives& p = primitives(*ctx_, s);
  const dnnl::engine& eng = ctx_->engine;
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, wrap(p.src, eng, x)},
                                          {DNNL_ARG_DST, wrap(p.dst, eng, y)}};
  if (p.saved_bytes == 0) {
    run_with(*ctx_, p.forward_train, p.train_scratch, std::move(args));
    return;
  }
  // No place to keep the argmax means nobody will run backward (evaluation):
  // the inference primitive gives the same y without writing it.
  if (saved == nullptr) {
    run_with(*ctx_, p.forward_infer, p.infer_scratch, std::move(args));
    return;
  }
  args.insert({DNNL_ARG_WORKSPACE, memory(p.saved, eng, saved)});
  run_with(*ctx_, p.forward_train, p.train_scratch, std::move(args));
}

void CpuKernels::pool_backward(const PoolShape& s, const void* x, const void* dy,
                               const void* saved, void* dx) {
  require_activation_type(s.dtype, "pool_backward");
  PoolPrimitives& p = primitives(*ctx_, s);
  const dnnl::engine& eng = ctx_->engine;
  std::unordered_map<int, memory> args = {{DNNL_ARG_DIFF_DST, wrap(p.dst, eng, dy)},
                                          {DNNL_ARG_DIFF_SRC, wrap(p.src, eng, dx)}};
  if (p.saved_bytes > 0) {
    if (saved == nullptr) {
      throw std::invalid_argument("pool: max-pooling backward needs what forward saved");
    }
    args.insert({DNNL_ARG_WORKSPACE, wrap(p.saved, eng, saved)});
  }
  run_with(*ctx_, p.backward, p.backward_scratch, std::move(args));
}

}  // namespace tidepool
