// Fully connected layers on oneDNN's inner product: y[n, out] = x[n, in] *
// W[out, in]^T + b[out].
//
// All layouts stay plain (nc for activations, oi for W). Unlike convolution
// there is no workspace to carve reorders from, and on AVX2 oneDNN runs the
// plain-layout inner product as a GEMM, which is what a blocked layout would
// buy anyway. A null bias (b or db) selects the bias-free primitive.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/onednn_util.h"

namespace tidepool {
namespace {

using namespace onednn;

struct Descs {
  memory::desc src, weights, bias, dst;
};

Descs descs(const LinearShape& s, bool bias) {
  return {f32_desc({s.n, s.in}, Tag::nc), f32_desc({s.out, s.in}, Tag::oi),
          bias ? vec_desc(s.out) : memory::desc(), f32_desc({s.n, s.out}, Tag::nc)};
}

dnnl::inner_product_forward::primitive_desc forward_pd(Context& ctx, const Descs& d) {
  return dnnl::inner_product_forward::primitive_desc(
      dnnl::inner_product_forward::desc(prop_kind::forward_training, d.src, d.weights, d.bias,
                                        d.dst),
      user_scratchpad(), ctx.engine);
}

struct LinearPrimitive final : CacheEntry {
  dnnl::primitive_desc hint;  // backward descriptors point at it; dies last
  Descs d;
  dnnl::primitive prim;
  OwnedScratchpad scratch;
};

LinearPrimitive& primitive(Context& ctx, Op op, const LinearShape& s, bool bias) {
  const CacheKey key = {static_cast<std::int64_t>(op), s.n, s.in, s.out, bias ? 1 : 0};
  return ctx.entry<LinearPrimitive>(key, [&] {
    validate(s);
    auto e = std::make_unique<LinearPrimitive>();
    e->d = descs(s, bias);
    const auto fwd = forward_pd(ctx, e->d);
    e->hint = fwd;
    const dnnl::primitive_attr attr = user_scratchpad();
    if (op == Op::linear_forward) {
      e->prim = dnnl::inner_product_forward(fwd);
      e->scratch.reset(fwd.scratchpad_desc(), ctx.engine);
    } else if (op == Op::linear_backward_data) {
      const dnnl::inner_product_backward_data::primitive_desc pd(
          dnnl::inner_product_backward_data::desc(e->d.src, e->d.weights, e->d.dst), attr,
          ctx.engine, fwd);
      e->prim = dnnl::inner_product_backward_data(pd);
      e->scratch.reset(pd.scratchpad_desc(), ctx.engine);
    } else {
      const dnnl::inner_product_backward_weights::primitive_desc pd(
          dnnl::inner_product_backward_weights::desc(e->d.src, e->d.weights, e->d.bias, e->d.dst),
          attr, ctx.engine, fwd);
      e->prim = dnnl::inner_product_backward_weights(pd);
      e->scratch.reset(pd.scratchpad_desc(), ctx.engine);
    }
    return e;
  });
}

void run_locked(Context& ctx, LinearPrimitive& e, std::unordered_map<int, memory> args) {
  std::lock_guard<std::mutex> lock(e.scratch.mutex());
  e.scratch.add_arg(args);
  ctx.run(e.prim, std::move(args));
}

}  // namespace

void CpuKernels::linear_forward(const LinearShape& s, const float* x, const float* w,
                                const float* b, float* y) {
  LinearPrimitive& e = primitive(*ctx_, Op::linear_forward, s, b != nullptr);
  const dnnl::engine& eng = ctx_->engine;
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, wrap(e.d.src, eng, x)},
                                          {DNNL_ARG_WEIGHTS, wrap(e.d.weights, eng, w)},
                                          {DNNL_ARG_DST, wrap(e.d.dst, eng, y)}};
  if (b != nullptr) args.insert({DNNL_ARG_BIAS, wrap(e.d.bias, eng, b)});
  run_locked(*ctx_, e, std::move(args));
}

void CpuKernels::linear_backward_data(const LinearShape& s, const float* dy, const float* w,
                                      float* dx) {
  // The data gradient does not depend on the bias; one primitive serves both.
  LinearPrimitive& e = primitive(*ctx_, Op::linear_backward_data, s, false);
  const dnnl::engine& eng = ctx_->engine;
  run_locked(*ctx_, e,
             {{DNNL_ARG_DIFF_DST, wrap(e.d.dst, eng, dy)},
              {DNNL_ARG_WEIGHTS, wrap(e.d.weights, eng, w)},
              {DNNL_ARG_DIFF_SRC, wrap(e.d.src, eng, dx)}});
}

void CpuKernels::linear_backward_weights(const LinearShape& s, const float* x, const float* dy,
                                         float* dw, float* db) {
  LinearPrimitive& e = primitive(*ctx_, Op::linear_backward_weights, s, db != nullptr);
  const dnnl::engine& eng = ctx_->engine;
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, wrap(e.d.src, eng, x)},
                                          {DNNL_ARG_DIFF_DST, wrap(e.d.dst, eng, dy)},
                                          {DNNL_ARG_DIFF_WEIGHTS, wrap(e.d.weights, eng, dw)}};
  if (db != nullptr) args.insert({DNNL_ARG_DIFF_BIAS, wrap(e.d.bias, eng, db)});
  run_locked(*ctx_, e, std::move(args));
}

}  // namespace tidepool
