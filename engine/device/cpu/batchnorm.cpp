// Batch normalisation on oneDNN, per channel over (n, h, w), on NCHW or
// channel-blocked data (BatchNormShape::channel_block), in f32 or, where
// the table takes it, bf16 (the statistics, gamma and beta in f32).
//
// oneDNN computes the batch mean and the biased batch variance (divided by
// N = n*h*w) and normalises with them; that pair is what backward needs, so
// it goes straight into saved_mean/saved_var. The running statistics follow
// PyTorch, which tracks the unbiased variance (divided by N - 1): oneDNN
// has no notion of running statistics, so they are updated here.
//
// A fused ReLU (BatchNormShape::relu) is oneDNN's fuse_norm_relu: forward
// writes max(bn(x), 0) and a mask (its workspace: a bit a value on
// channel-blocked data, a byte on NCHW) that backward reads to pass no
// gradient where the ReLU cut, so neither pass costs a sweep of its own for
// the ReLU. oneDNN's fused ReLU writes 0 for a NaN (its unfused one, and
// the cuda device's fused one, keep NaN); a NaN batch norm output means
// NaN statistics, which reach the gradients anyway.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/onednn_util.h"
#include "engine/device/cpu/running_statistics.h"

namespace tidepool {
namespace {

using namespace onednn;

using dnnl::normalization_flags;

memory::desc data_desc(const BatchNormShape& s) {
  return activation_desc(s.n, s.c, s.h, s.w, s.channel_block, s.dtype);
}

normalization_flags flags(const BatchNormShape& s, normalization_flags extra) {
  return normalization_flags::use_scale | normalization_flags::use_shift | extra |
         (s.relu ? normalization_flags::fuse_norm_relu : normalization_flags::none);
}

dnnl::batch_normalization_forward::desc forward_desc(const BatchNormShape& s, prop_kind kind,
                                                     normalization_flags extra) {
  return dnnl::batch_normalization_forward::desc(kind, data_desc(s), s.eps, flags(s, extra));
}

struct BnPrimitive final : CacheEntry {
  // Backward descriptors keep a raw pointer to their forward hint, so the
  // hint lives (and dies last) with the primitive.
  dnnl::primitive_desc hint;
  dnnl::primitive prim;
  OwnedScratchpad scratch;
  memory::desc relu_mask;  // the fused ReLU's workspace; empty without one
  // oneDNN 2.6's backward with use_shift insists on a shift argument even
  // though the gradient does not depend on beta, and batchnorm_backward is
  // (rightly) not given beta. This zero vector stands in for it.
  std::vector<float> unused_shift;
};

CacheKey key_of(Op op, const BatchNormShape& s) {
  return {static_cast<std::int64_t>(op), s.n, s.c, s.h, s.w, float_bits(s.eps), s.channel_block, s.relu,
          static_cast<std::int64_t>(s.dtype)};
}

BnPrimitive& train_primitive(Context& ctx, const BatchNormShape& s) {
  return ctx.entry<BnPrimitive>(key_of(Op::batchnorm_train, s), [&] {
    validate(s);
    const dnnl::batch_normalization_forward::primitive_desc pd(
        forward_desc(s, prop_kind::forward_training, normalization_flags::none), user_scratchpad(),
        ctx.engine);
    auto e = std::make_unique<BnPrimitive>();
    e->prim = dnnl::batch_normalization_forward(pd);
    e->scratch.reset(pd.scratchpad_desc(), ctx.engine);
    if (s.relu) e->relu_mask = pd.workspace_desc();
    return e;
  });
}

BnPrimitive& infer_primitive(Context& ctx, const BatchNormShape& s) {
  return ctx.entry<BnPrimitive>(key_of(Op::batchnorm_infer, s), [&] {
    validate(s);
    const dnnl::batch_normalization_forward::primitive_desc pd(
        forward_desc(s, prop_kind::forward_inference, normalization_flags::use_global_stats),
        user_scratchpad(), ctx.engine);
    auto e = std::make_unique<BnPrimitive>();
    e->prim = dnnl::batch_normalization_forward(pd);
    e->scratch.reset(pd.scratchpad_desc(), ctx.engine);
    return e;
  });
}

BnPrimitive& backward_primitive(Context& ctx, const BatchNormShape& s) {
  return ctx.entry<BnPrimitive>(key_of(Op::batchnorm_backward, s), [&] {
    validate(s);
    const dnnl::primitive_attr attr = user_scratchpad();
    const dnnl::batch_normalization_forward::primitive_desc hint(
        forward_desc(s, prop_kind::forward_training, normalization_flags::none), attr, ctx.engine);
    const dnnl::batch_normalization_backward::desc desc(prop_kind::backward, data_desc(s), data_desc(s), s.eps,
                                                        flags(s, normalization_flags::none));
    const dnnl::batch_normalization_backward::primitive_desc pd(desc, attr, ctx.engine, hint);
    auto e = std::make_unique<BnPrimitive>();
    e->hint = hint;
    e->prim = dnnl::batch_normalization_backward(pd);
    e->unused_shift.assign(static_cast<std::size_t>(s.c), 0.0f);
    e->scratch.reset(pd.scratchpad_desc(), ctx.engine);
    if (s.relu) e->relu_mask = pd.workspace_desc();
    return e;
  });
}

void run_locked(Context& ctx, BnPrimitive& e, std::unordered_map<int, memory> args) {
  std::lock_guard<std::mutex> lock(e.scratch.mutex());
  e.scratch.add_arg(args);
  ctx.run(e.prim, std::move(args));
}

// The fused ReLU's mask argument, when the primitive has one.
void add_relu_mask(const BnPrimitive& e, const dnnl::engine& eng, const void* mask,
                   std::unordered_map<int, memory>& args) {
  if (e.relu_mask.get_size() == 0) return;
  if (mask == nullptr) throw std::invalid_argument("batchnorm: a fused ReLU needs its mask and got none");
  args.insert({DNNL_ARG_WORKSPACE, wrap(e.relu_mask, eng, mask)});
}

}  // namespace

std::size_t CpuKernels::batchnorm_relu_mask_bytes(const BatchNormShape& s) const {
  return s.relu ? train_primitive(*ctx_, s).relu_mask.get_size() : 0;
}

void CpuKernels::batchnorm_forward_train(const BatchNormShape& s, const void* x,
                                         const float* gamma, const float* beta, void* y,
                                         float* saved_mean, float* saved_var, float* running_mean,
                                         float* running_var, void* relu_mask) {
  require_activation_type(s.dtype, "batchnorm_forward_train");
  BnPrimitive& e = train_primitive(*ctx_, s);
  const dnnl::engine& eng = ctx_->engine;
  const memory::desc data = data_desc(s);
  const memory::desc channel = vec_desc(s.c);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, wrap(data, eng, x)},
                                          {DNNL_ARG_DST, wrap(data, eng, y)},
                                          {DNNL_ARG_SCALE, wrap(channel, eng, gamma)},
                                          {DNNL_ARG_SHIFT, wrap(channel, eng, beta)},
                                          {DNNL_ARG_MEAN, wrap(channel, eng, saved_mean)},
                                          {DNNL_ARG_VARIANCE, wrap(channel, eng, saved_var)}};
  add_relu_mask(e, eng, relu_mask, args);
  run_locked(*ctx_, e, std::move(args));
  update_running_statistics(s, static_cast<double>(s.n) * static_cast<double>(s.h * s.w), saved_mean, saved_var,
                            running_mean, running_var);
}

void CpuKernels::batchnorm_forward_infer(const BatchNormShape& s, const void* x,
                                         const float* gamma, const float* beta,
                                         const float* running_mean, const float* running_var,
                                         void* y) {
  require_activation_type(s.dtype, "batchnorm_forward_infer");
  BnPrimitive& e = infer_primitive(*ctx_, s);
  const dnnl::engine& eng = ctx_->engine;
  const memory::desc data = data_desc(s);
  const memory::desc channel = vec_desc(s.c);
  run_locked(*ctx_, e,
             {{DNNL_ARG_SRC, wrap(data, eng, x)},
              {DNNL_ARG_DST, wrap(data, eng, y)},
              {DNNL_ARG_SCALE, wrap(channel, eng, gamma)},
              {DNNL_ARG_SHIFT, wrap(channel, eng, beta)},
              {DNNL_ARG_MEAN, wrap(channel, eng, running_mean)},
              {DNNL_ARG_VARIANCE, wrap(channel, eng, running_var)}});
}

void CpuKernels::batchnorm_backward(const BatchNormShape& s, const void* x, const void* dy,
                                    const float* gamma, const float* saved_mean,
                                    const float* saved_var, void* dx, float* dgamma,
                                    float* dbeta, const void* relu_mask) {
  require_activation_type(s.dtype, "batchnorm_backward");
  BnPrimitive& e = backward_primitive(*ctx_, s);
  const dnnl::engine& eng = ctx_->engine;
  const memory::desc data = data_desc(s);
  const memory::desc channel = vec_desc(s.c);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, wrap(data, eng, x)},
                                          {DNNL_ARG_DIFF_DST, wrap(data, eng, dy)},
                                          {DNNL_ARG_SCALE, wrap(channel, eng, gamma)},
                                          {DNNL_ARG_SHIFT, wrap(channel, eng, e.unused_shift.data())},
                                          {DNNL_ARG_MEAN, wrap(channel, eng, saved_mean)},
                                          {DNNL_ARG_VARIANCE, wrap(channel, eng, saved_var)},
                                          {DNNL_ARG_DIFF_SRC, wrap(data, eng, dx)},
                                          {DNNL_ARG_DIFF_SCALE, wrap(channel, eng, dgamma)},
                                          {DNNL_ARG_DIFF_SHIFT, wrap(channel, eng, dbeta)}};
  add_relu_mask(e, eng, relu_mask, args);
  run_locked(*ctx_, e, std::move(args));
}

}  // namespace tidepool
