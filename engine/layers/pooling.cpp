#include "engine/layers/pooling.h"

#include "engine/device/kernels.h"

namespace tidepool {

Pool2d::Pool2d(std::string name, PoolOptions options) : Layer(std::move(name)), options_(options) {
  if (!options_.global && (options_.kernel <= 0 || options_.stride <= 0 || options_.padding < 0))
    fail("kernel and stride must be positive and padding >= 0");
  if (!options_.global && options_.padding * 2 > options_.kernel)
    fail("padding must be at most half the kernel");
}

std::string_view Pool2d::kind() const {
  if (options_.global) return "global_avgpool";
  return options_.kind == PoolKind::max ? "maxpool" : "avgpool";
}

PoolShape Pool2d::pool_shape(const Shape& x, std::int64_t channel_block, DType dtype) const {
  PoolShape s;
  s.channel_block = channel_block;
  s.dtype = dtype;
  s.kind = options_.global ? PoolKind::avg : options_.kind;
  s.n = x[0], s.c = x[1], s.h = x[2], s.w = x[3];
  if (options_.global) {
    s.kh = s.h, s.kw = s.w, s.stride_h = s.h, s.stride_w = s.w, s.pad_h = s.pad_w = 0;
  } else {
    s.kh = s.kw = options_.kernel;
    s.stride_h = s.stride_w = options_.stride;
    s.pad_h = s.pad_w = options_.padding;
  }
  return s;
}

Shape Pool2d::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1 || in[0].rank() != 4) fail("expects one NCHW input");
  const PoolShape s = pool_shape(in[0]);
  if (s.out_h() <= 0 || s.out_w() <= 0) fail("input " + in[0].str() + " is smaller than the window");
  return Shape{s.n, s.c, s.out_h(), s.out_w()};
}

std::vector<SavedSpec> Pool2d::saved(const std::vector<Shape>& in, std::int64_t channel_block, const KernelQueries& k) const {
  const std::size_t bytes = k.pool_saved_bytes(pool_shape(in[0], channel_block));
  if (bytes == 0) return {};
  return {{"argmax", bytes}};
}

void Pool2d::forward(Kernels& k, const LayerArgs& a) const {
  const PoolShape s = pool_shape(a.input_shapes[0], a.channel_block, a.dtype);
  k.pool_forward(s, a.inputs[0], a.output, a.saved.empty() ? nullptr : a.saved[0]);
}

void Pool2d::backward(Kernels& k, const LayerArgs& a) const {
  if (!a.input_grads[0]) return;
  const PoolShape s = pool_shape(a.input_shapes[0], a.channel_block, a.dtype);
  k.pool_backward(s, a.inputs[0], a.output_grad, a.saved.empty() ? nullptr : a.saved[0], a.input_grads[0]);
}

}  // namespace tidepool
