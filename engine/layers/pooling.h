// Max and average pooling; global average pooling is an average over the
// whole feature map (output N x C x 1 x 1).
#pragma once

#include "engine/core/layer.h"
#include "engine/device/kernel_shapes.h"

namespace tidepool {

struct PoolOptions {
  PoolKind kind = PoolKind::max;
  std::int64_t kernel = 2;
  std::int64_t stride = 2;
  std::int64_t padding = 0;
  bool global = false;  // kernel = the input's height and width
};

class Pool2d final : public Layer {
 public:
  Pool2d(std::string name, PoolOptions options);

  std::string_view kind() const override;
  Shape infer(const std::vector<Shape>& inputs) const override;
  std::vector<SavedSpec> saved(const std::vector<Shape>& inputs, std::int64_t channel_block,
                               const KernelQueries&) const override;
  // The device's pooling backward may read x (cuDNN does); max pooling keeps
  // its argmax in `saved`.
  bool backward_reads_input(int) const override { return options_.kind == PoolKind::max; }
  bool backward_reads_output() const override { return false; }
  bool has_16bit_kernels() const override { return true; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;

  PoolShape pool_shape(const Shape& x, std::int64_t channel_block = 0, DType dtype = DType::f32) const;

 private:
  PoolOptions options_;
};

}  // namespace tidepool
