// Convolution (grouped and depthwise included) on oneDNN.
//
// In bf16 (CpuKernels::takes_16bit) the activations and their gradients
// are bf16 and the weights are reordered into a bf16 copy in the
// workspace like any operand in another layout; the weight gradient and
// the bias stay f32, as oneDNN's bf16 training kernels accumulate in f32.
//
// The arena holds OIHW weights (GOIHW, the same bytes, when groups > 1) and
// activations in the schedule's layout: channel-blocked (nChw8c on AVX2,
// the layout oneDNN's fast kernels want) where ConvShape::channel_block
// says so, NCHW otherwise. Operands in another layout than the chosen
// implementation's (always the weights, and NCHW images) are reordered into
// workspace copies, and an output is reordered back. The workspace is carved as
//
//   [in0 copy][in1 copy][out copy][scratch]
//
// each piece present only when needed and starting at a multiple of 64
// bytes. `scratch` is shared by the convolution's scratchpad and the
// reorders' (they never run at the same time), so it is the largest of them.
//
// Algorithm choice, vDNN-style:
//  - p ("performance"): oneDNN's first implementation for convolution_auto
//    with every layout `any`. oneDNN orders its implementation list by
//    expected speed, so the first one that accepts the shape is its
//    heuristic fastest; layout reorders are the price of that speed.
//  - m ("memory"): the implementation with the smallest total workspace,
//    searched over convolution_direct and convolution_auto, `any` and plain
//    layouts, and every implementation oneDNN offers for each. oneDNN's
//    reference implementations ("ref:") are left out of the search: they
//    need no workspace at all but run 100-1000x slower (0.1 GFLOP/s against
//    120 for the plain-layout GEMM one on a ResNet 3x3 layer), which would
//    turn a memory/speed trade-off into an unusable model. The p choice is
//    always a candidate, so an m workspace is never larger than a p one.
#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/onednn_util.h"

namespace tidepool {
namespace {

using namespace onednn;

struct Geometry {
  Dims src, weights, dst, strides, dilates, pad_l, pad_r;
  Tag src_tag, weights_tag, dst_tag;  // as the arena holds them
  memory::data_type act = kF32;       // the activations' type (ConvShape::dtype)
};

Geometry geometry(const ConvShape& s) {
  Geometry g;
  g.src = {s.n, s.c, s.h, s.w};
  g.dst = {s.n, s.k, s.out_h(), s.out_w()};
  g.act = data_type(s.dtype);
  g.src_tag = activation_tag(s.c, s.channel_block);
  g.dst_tag = activation_tag(s.k, s.channel_block);
  if (s.groups == 1) {
    g.weights = {s.k, s.c, s.r, s.s};
    g.weights_tag = Tag::oihw;
  } else {
    g.weights = {s.groups, s.k / s.groups, s.c / s.groups, s.r, s.s};
    g.weights_tag = Tag::goihw;
  }
  g.strides = {s.stride_h, s.stride_w};
  // oneDNN counts dilation as the gap between taps (0 = dense), PyTorch
  // as the tap spacing (1 = dense).
  g.dilates = {s.dil_h - 1, s.dil_w - 1};
  g.pad_l = {s.pad_h, s.pad_w};
  // The output size rounds down, so the bottom/right padding that is really
  // read can be less than pad_h/pad_w (or even cut rows off the input).
  // oneDNN wants that effective amount.
  const auto end_pad = [](std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                          std::int64_t dil, std::int64_t pad) {
    return (out - 1) * stride + (k - 1) * dil + 1 - in - pad;
  };
  g.pad_r = {end_pad(s.h, s.out_h(), s.r, s.stride_h, s.dil_h, s.pad_h),
             end_pad(s.w, s.out_w(), s.s, s.stride_w, s.dil_w, s.pad_w)};
  return g;
}

// Which oneDNN argument each of a pass's three operands is. in0/in1 are
// read, out is written; for backward_weights the bias gradient rides along.
struct Role {
  dnnl::query query;
  int arg;
};
struct PassRoles {
  Role in0, in1, out;
};

PassRoles roles(ConvPass pass) {
  using q = dnnl::query;
  switch (pass) {
    case ConvPass::forward:
      return {
          {q::src_md, DNNL_ARG_SRC}, {q::weights_md, DNNL_ARG_WEIGHTS}, {q::dst_md, DNNL_ARG_DST}};
    case ConvPass::backward_data:
      return {{q::diff_dst_md, DNNL_ARG_DIFF_DST},
              {q::weights_md, DNNL_ARG_WEIGHTS},
              {q::diff_src_md, DNNL_ARG_DIFF_SRC}};
    case ConvPass::backward_weights:
      return {{q::src_md, DNNL_ARG_SRC},
              {q::diff_dst_md, DNNL_ARG_DIFF_DST},
              {q::diff_weights_md, DNNL_ARG_DIFF_WEIGHTS}};
  }
  throw std::invalid_argument("conv: unknown pass");
}

// The arena layouts of a pass's operands ("plain" below), in role order.
std::array<memory::desc, 3> plain_descs(const Geometry& g, ConvPass pass) {
  const memory::desc src(g.src, g.act, g.src_tag);
  const memory::desc wei = f32_desc(g.weights, g.weights_tag);
  const memory::desc dst(g.dst, g.act, g.dst_tag);
  switch (pass) {
    case ConvPass::forward:
      return {src, wei, dst};
    case ConvPass::backward_data:
      return {dst, wei, src};
    case ConvPass::backward_weights:
      return {src, dst, wei};
  }
  throw std::invalid_argument("conv: unknown pass");
}

// One point of the search space: layouts `any` or plain, the algorithm, and
// the position in oneDNN's implementation list.
struct Choice {
  bool any = true;
  algorithm alg = algorithm::convolution_auto;
  int index = 0;
};

// Operation descriptors and attributes an iterator was created from. The
// iterator keeps raw pointers to them (oneDNN 2.x) and reads them again on
// every next_impl(), so they are heap-held and shared with it.
struct OpDescs {
  explicit OpDescs(dnnl::convolution_forward::desc f) : fwd(std::move(f)) {}
  dnnl::primitive_attr attr = user_scratchpad();
  dnnl::convolution_forward::desc fwd;
  std::optional<dnnl::convolution_backward_data::desc> bwd_data;
  std::optional<dnnl::convolution_backward_weights::desc> bwd_weights;
};

// A pass's descriptor iterator together with what it points into: the op
// descriptors, and for backward passes the forward descriptor used as the
// hint, of which oneDNN also keeps only a raw pointer. Members are declared
// in dependency order, so the pointees are destroyed last.
struct PdChain {
  std::shared_ptr<const OpDescs> descs;
  dnnl::primitive_desc hint;
  dnnl::primitive_desc pd;
};

// Creates the descriptor iterator for (shape, pass, any, alg), positioned at
// its first implementation; pd is empty when oneDNN has none and allow_empty.
PdChain make_pd(Context& ctx, const ConvShape& s, const Geometry& g, ConvPass pass, bool any,
                algorithm alg, bool allow_empty) {
  const memory::desc src(g.src, g.act, any ? Tag::any : g.src_tag);
  // The weights in the activations' type where the kernel reads them
  // (forward, backward data); their gradient in f32.
  const memory::desc wei(g.weights, g.act, any ? Tag::any : g.weights_tag);
  const memory::desc dwei = f32_desc(g.weights, any ? Tag::any : g.weights_tag);
  const memory::desc dst(g.dst, g.act, any ? Tag::any : g.dst_tag);
  const memory::desc bias = s.bias ? vec_desc(s.k) : memory::desc();

  auto descs = std::make_shared<OpDescs>(
      dnnl::convolution_forward::desc(prop_kind::forward_training, alg, src, wei, bias, dst,
                                      g.strides, g.dilates, g.pad_l, g.pad_r));
  if (pass == ConvPass::backward_data) {
    descs->bwd_data.emplace(alg, src, wei, dst, g.strides, g.dilates, g.pad_l, g.pad_r);
  } else if (pass == ConvPass::backward_weights) {
    descs->bwd_weights.emplace(alg, src, dwei, bias, dst, g.strides, g.dilates, g.pad_l, g.pad_r);
  }

  PdChain chain;
  chain.descs = descs;
  const dnnl::convolution_forward::primitive_desc fwd_pd(descs->fwd, descs->attr, ctx.engine,
                                                         allow_empty);
  if (pass == ConvPass::forward) {
    chain.pd = fwd_pd;
    return chain;
  }
  if (!fwd_pd) return chain;
  chain.hint = fwd_pd;
  if (pass == ConvPass::backward_data) {
    chain.pd = dnnl::convolution_backward_data::primitive_desc(*descs->bwd_data, descs->attr,
                                                               ctx.engine, fwd_pd, allow_empty);
  } else {
    chain.pd = dnnl::convolution_backward_weights::primitive_desc(*descs->bwd_weights, descs->attr,
                                                                  ctx.engine, fwd_pd, allow_empty);
  }
  return chain;
}

struct Operand {
  memory::desc plain, chosen;
  bool reordered = false;
  dnnl::reorder::primitive_desc reorder_pd;  // plain -> chosen for inputs, back for the output
  std::size_t offset = 0;
};

struct Layout {
  std::array<Operand, 3> ops;  // in0, in1, out
  memory::desc scratch;        // the convolution's own scratchpad
  std::size_t scratch_offset = 0;
  std::size_t total = 0;
};

Layout lay_out(Context& ctx, const dnnl::primitive_desc& pd, const Geometry& g, ConvPass pass) {
  const PassRoles r = roles(pass);
  const std::array<memory::desc, 3> plain = plain_descs(g, pass);
  const std::array<Role, 3> role = {r.in0, r.in1, r.out};
  const dnnl::primitive_attr attr = user_scratchpad();

  Layout lay;
  std::size_t cursor = 0;
  std::size_t scratch_bytes = pd.scratchpad_desc().get_size();
  for (std::size_t i = 0; i < 3; ++i) {
    Operand& op = lay.ops[i];
    op.plain = plain[i];
    op.chosen = pd.query_md(role[i].query);
    op.reordered = op.chosen != op.plain;
    if (!op.reordered) continue;
    const bool is_output = i == 2;
    op.reorder_pd =
        is_output
            ? dnnl::reorder::primitive_desc(ctx.engine, op.chosen, ctx.engine, op.plain, attr)
            : dnnl::reorder::primitive_desc(ctx.engine, op.plain, ctx.engine, op.chosen, attr);
    scratch_bytes = std::max(scratch_bytes, op.reorder_pd.scratchpad_desc().get_size());
    op.offset = cursor;
    cursor += align_up(op.chosen.get_size());
  }
  lay.scratch = pd.scratchpad_desc();
  lay.scratch_offset = cursor;
  lay.total = cursor + align_up(scratch_bytes);
  return lay;
}

bool is_reference_impl(std::string_view name) { return name.substr(0, 4) == "ref:"; }

PdChain pd_at(Context& ctx, const ConvShape& s, const Geometry& g, ConvPass pass, const Choice& c) {
  PdChain chain = make_pd(ctx, s, g, pass, c.any, c.alg, /*allow_empty=*/false);
  for (int i = 0; i < c.index; ++i) {
    if (!chain.pd.next_impl()) throw std::logic_error("conv: implementation list changed");
  }
  return chain;
}

Choice choose(Context& ctx, const ConvShape& s, const Geometry& g, ConvScheme scheme,
              ConvPass pass) {
  const Choice fastest{};
  if (scheme == ConvScheme::p) return fastest;

  Choice best = fastest;
  std::size_t best_total = lay_out(ctx, pd_at(ctx, s, g, pass, fastest).pd, g, pass).total;
  for (bool any : {true, false}) {
    for (algorithm alg : {algorithm::convolution_direct, algorithm::convolution_auto}) {
      PdChain chain = make_pd(ctx, s, g, pass, any, alg, /*allow_empty=*/true);
      dnnl::primitive_desc& pd = chain.pd;
      if (!pd) continue;
      int index = 0;
      do {
        if (!is_reference_impl(pd.impl_info_str())) {
          const std::size_t total = lay_out(ctx, pd, g, pass).total;
          // Strictly smaller: on a tie the earlier (faster-listed) one stays.
          if (total < best_total) {
            best_total = total;
            best = Choice{any, alg, index};
          }
        }
        ++index;
      } while (pd.next_impl());
    }
  }
  return best;
}

struct ConvPlan final : CacheEntry {
  PdChain chain;  // kept alive for the primitives, see PdChain
  Layout layout;
  dnnl::primitive conv;
  std::array<dnnl::primitive, 3> reorders;  // per operand, when reordered
  memory::desc bias;                        // plain [k], when the shape has one
  std::string name;
};

std::unique_ptr<ConvPlan> build_plan(Context& ctx, const ConvShape& s, ConvScheme scheme,
                                     ConvPass pass) {
  validate(s);
  const Geometry g = geometry(s);
  try {
    const Choice choice = choose(ctx, s, g, scheme, pass);
    auto plan = std::make_unique<ConvPlan>();
    plan->chain = pd_at(ctx, s, g, pass, choice);
    const dnnl::primitive_desc& pd = plan->chain.pd;
    plan->layout = lay_out(ctx, pd, g, pass);
    plan->conv = dnnl::primitive(pd);
    bool any_reorder = false;
    for (std::size_t i = 0; i < 3; ++i) {
      const Operand& op = plan->layout.ops[i];
      if (op.reordered) plan->reorders[i] = dnnl::reorder(op.reorder_pd);
      any_reorder = any_reorder || op.reordered;
    }
    if (s.bias) plan->bias = vec_desc(s.k);
    plan->name =
        std::string(pd.impl_info_str()) + (any_reorder ? " (blocked layouts)" : " (plain layouts)");
    return plan;
  } catch (const dnnl::error& e) {
    throw std::runtime_error(
        "conv: oneDNN cannot build the primitive for c=" + std::to_string(s.c) +
        " k=" + std::to_string(s.k) + " groups=" + std::to_string(s.groups) + ": " + e.what());
  }
}

ConvPlan& plan_for(Context& ctx, const ConvShape& s, ConvScheme scheme, ConvPass pass) {
  const CacheKey key = conv_key(static_cast<std::int64_t>(Op::conv), s, scheme, pass);
  return ctx.entry<ConvPlan>(key, [&] { return build_plan(ctx, s, scheme, pass); });
}

// Runs one pass: reorder inputs into the workspace, convolve, reorder the
// output back to the caller's plain buffer.
void execute(Context& ctx, const ConvPlan& plan, ConvPass pass, const void* in0, const void* in1,
             void* out, const void* bias_arg, void* workspace) {
  const Layout& lay = plan.layout;
  if (lay.total > 0 && workspace == nullptr) {
    throw std::invalid_argument("conv: this pass needs " + std::to_string(lay.total) +
                                " bytes of workspace and got none");
  }
  auto* base = static_cast<std::byte*>(workspace);
  std::byte* scratch = lay.total > 0 ? base + lay.scratch_offset : nullptr;
  const dnnl::engine& eng = ctx.engine;
  const PassRoles r = roles(pass);
  const std::array<int, 3> args = {r.in0.arg, r.in1.arg, r.out.arg};
  const std::array<const void*, 3> user = {in0, in1, out};

  std::unordered_map<int, memory> conv_args;
  memory out_user, out_mem;
  for (std::size_t i = 0; i < 3; ++i) {
    const Operand& op = lay.ops[i];
    memory user_mem = wrap(op.plain, eng, user[i]);
    if (!op.reordered) {
      conv_args.insert({args[i], user_mem});
      if (i == 2) out_user = out_mem = user_mem;
      continue;
    }
    memory copy(op.chosen, eng, base + op.offset);
    conv_args.insert({args[i], copy});
    if (i == 2) {
      out_user = user_mem;
      out_mem = copy;
      continue;
    }
    std::unordered_map<int, memory> reorder_args = {{DNNL_ARG_FROM, user_mem}, {DNNL_ARG_TO, copy}};
    const memory::desc rs = op.reorder_pd.scratchpad_desc();
    if (rs.get_size() > 0) reorder_args.insert({DNNL_ARG_SCRATCHPAD, memory(rs, eng, scratch)});
    ctx.run(plan.reorders[i], std::move(reorder_args));
  }
  if (bias_arg != nullptr) {
    const int arg = pass == ConvPass::forward ? DNNL_ARG_BIAS : DNNL_ARG_DIFF_BIAS;
    conv_args.insert({arg, wrap(plan.bias, eng, bias_arg)});
  }
  if (lay.scratch.get_size() > 0) {
    conv_args.insert({DNNL_ARG_SCRATCHPAD, memory(lay.scratch, eng, scratch)});
  }
  ctx.run(plan.conv, std::move(conv_args));

  const Operand& op = lay.ops[2];
  if (op.reordered) {
    std::unordered_map<int, memory> reorder_args = {{DNNL_ARG_FROM, out_mem},
                                                    {DNNL_ARG_TO, out_user}};
    const memory::desc rs = op.reorder_pd.scratchpad_desc();
    if (rs.get_size() > 0) reorder_args.insert({DNNL_ARG_SCRATCHPAD, memory(rs, eng, scratch)});
    ctx.run(plan.reorders[2], std::move(reorder_args));
  }
}

void require_bias(const ConvShape& s, const void* p, const char* what) {
  if (s.bias && p == nullptr) {
    throw std::invalid_argument(std::string("conv: the shape has a bias but ") + what + " is null");
  }
}

}  // namespace

std::size_t CpuKernels::conv_workspace_bytes(const ConvShape& s, ConvScheme scheme, ConvPass pass) const {
  require_activation_type(s.dtype, "conv_workspace_bytes");
  return plan_for(*ctx_, s, scheme, pass).layout.total;
}

std::string CpuKernels::conv_algorithm_name(const ConvShape& s, ConvScheme scheme, ConvPass pass) {
  return plan_for(*ctx_, s, scheme, pass).name;
}

void CpuKernels::conv_forward(const ConvShape& s, ConvScheme scheme, const void* x, const float* w,
                              const float* b, void* y, void* workspace) {
  require_activation_type(s.dtype, "conv_forward");
  require_bias(s, b, "b");
  const ConvPlan& plan = plan_for(*ctx_, s, scheme, ConvPass::forward);
  execute(*ctx_, plan, ConvPass::forward, x, w, y, s.bias ? b : nullptr, workspace);
}

void CpuKernels::conv_backward_data(const ConvShape& s, ConvScheme scheme, const void* dy,
                                    const float* w, void* dx, void* workspace) {
  require_activation_type(s.dtype, "conv_backward_data");
  const ConvPlan& plan = plan_for(*ctx_, s, scheme, ConvPass::backward_data);
  execute(*ctx_, plan, ConvPass::backward_data, dy, w, dx, nullptr, workspace);
}

void CpuKernels::conv_backward_weights(const ConvShape& s, ConvScheme scheme, const void* x,
                                       const void* dy, float* dw, float* db, void* workspace) {
  require_activation_type(s.dtype, "conv_backward_weights");
  require_bias(s, db, "db");
  const ConvPlan& plan = plan_for(*ctx_, s, scheme, ConvPass::backward_weights);
  execute(*ctx_, plan, ConvPass::backward_weights, x, dy, dw, s.bias ? db : nullptr, workspace);
}

}  // namespace tidepool
