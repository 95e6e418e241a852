#include "engine/layers/batchnorm.h"

#include "engine/device/kernels.h"

namespace tidepool {

BatchNormShape BatchNorm::bn_shape(const Shape& x, std::int64_t channel_block, DType dtype) const {
  BatchNormShape s;
  s.dtype = dtype;
  // A 2-D [n, c] input is never blocked (channel_blocked() is for 4-D ones).
  s.channel_block = x.rank() == 4 ? channel_block : 0;
  s.n = x[0], s.c = x[1];
  s.h = x.rank() == 4 ? x[2] : 1;
  s.w = x.rank() == 4 ? x[3] : 1;
  s.eps = eps_;
  s.momentum = momentum_;
  s.relu = relu_;
  return s;
}

std::unique_ptr<Layer> BatchNorm::with_relu() const {
  return relu_ ? nullptr : std::make_unique<BatchNorm>(name(), eps_, momentum_, true);
}

Shape BatchNorm::infer(const std::vector<Shape>& in) const {
  if (in.size() != 1 || (in[0].rank() != 4 && in[0].rank() != 2))
    fail("expects one NCHW or NC input");
  return in[0];
}

std::vector<ParamSpec> BatchNorm::params(const std::vector<Shape>& in) const {
  const Shape c{in[0][1]};
  return {{"weight", c, ParamInit::ones},
          {"bias", c, ParamInit::zeros},
          {"running_mean", c, ParamInit::zeros, 1, 1, false},
          {"running_var", c, ParamInit::ones, 1, 1, false}};
}

std::vector<SavedSpec> BatchNorm::saved(const std::vector<Shape>& in, std::int64_t channel_block,
                                        const KernelQueries& k) const {
  const std::size_t bytes = static_cast<std::size_t>(in[0][1]) * sizeof(float);
  std::vector<SavedSpec> out = {{"saved_mean", bytes}, {"saved_var", bytes}};
  // A fused batch norm never runs in parts (rank_sums refuses it).
  if (relu_) out.push_back({"relu_mask", k.batchnorm_relu_mask_bytes(bn_shape(in[0], channel_block))});
  return out;
}

std::size_t BatchNorm::rank_sums(const std::vector<Shape>& in, Pass) const {
  if (relu_)
    fail("has a fused ReLU, which the --sync-bn kernels do not apply: build the network with fuse(..., sync_bn = "
         "true), which leaves batch norms unfused");
  return static_cast<std::size_t>(batchnorm_sums_count(in[0][1]));
}

namespace {

// A fused ReLU's mask (saved()).
void* relu_mask(const LayerArgs& a) { return a.saved.size() > 2 ? a.saved[2] : nullptr; }

}  // namespace

void BatchNorm::forward(Kernels& k, const LayerArgs& a) const {
  const BatchNormShape s = bn_shape(a.input_shapes[0], a.channel_block, a.dtype);
  const void* x = a.inputs[0];
  void* y = a.output;
  auto* saved_mean = static_cast<float*>(a.saved[0]);
  auto* saved_var = static_cast<float*>(a.saved[1]);
  if (!a.training) {
    k.batchnorm_forward_infer(s, x, a.params[0], a.params[1], a.params[2], a.params[3], y);
    return;
  }
  switch (a.part) {
    // A recompute writes y, the batch statistics and the mask again, the
    // same bits as the first pass; the running statistics moved once.
    case PassPart::whole:
      k.batchnorm_forward_train(s, x, a.params[0], a.params[1], y, saved_mean, saved_var,
                                a.recompute ? nullptr : a.params[2], a.recompute ? nullptr : a.params[3], relu_mask(a));
      break;
    case PassPart::sums: k.batchnorm_sums(s, as_f32(x), a.rank_sums); break;
    case PassPart::rest:
      k.batchnorm_forward_with_sums(s, as_f32(x), a.params[0], a.params[1], a.rank_sums, as_f32(y), saved_mean,
                                    saved_var, a.params[2], a.params[3]);
      break;
  }
}

void BatchNorm::backward(Kernels& k, const LayerArgs& a) const {
  const BatchNormShape s = bn_shape(a.input_shapes[0], a.channel_block, a.dtype);
  const void* x = a.inputs[0];
  const auto* saved_mean = static_cast<const float*>(a.saved[0]);
  const auto* saved_var = static_cast<const float*>(a.saved[1]);
  // batchnorm always produces dx: nothing upstream of a batchnorm is an input image.
  switch (a.part) {
    case PassPart::whole:
      k.batchnorm_backward(s, x, a.output_grad, a.params[0], saved_mean, saved_var, a.input_grads[0],
                           a.param_grads[0], a.param_grads[1], relu_mask(a));
      break;
    // dgamma and dbeta from this rank's sums, not the summed ones: the
    // gradient all-reduce averages them over the ranks like every
    // parameter gradient, and averaging sums that already hold every rank
    // would make them `ranks` times too large.
    case PassPart::sums:
      k.batchnorm_backward_sums(s, as_f32(x), as_f32(a.output_grad), saved_mean, saved_var, a.rank_sums,
                                a.param_grads[0], a.param_grads[1]);
      break;
    case PassPart::rest:
      k.batchnorm_backward_with_sums(s, as_f32(x), as_f32(a.output_grad), a.params[0], saved_mean, saved_var,
                                     a.rank_sums, as_f32(a.input_grads[0]));
      break;
  }
}

}  // namespace tidepool
