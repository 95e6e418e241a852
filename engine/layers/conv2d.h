// 2-D convolution, optionally grouped; `depthwise` is groups == channels.
#pragma once

#include "engine/core/layer.h"
#include "engine/device/kernel_shapes.h"

namespace tidepool {

struct Conv2dOptions {
  std::int64_t out_channels = 1;
  std::int64_t kernel = 3;
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;
  std::int64_t groups = 1;
  bool bias = false;
  bool depthwise = false;  // groups = out_channels = in_channels
};

class Conv2d final : public Layer {
 public:
  Conv2d(std::string name, Conv2dOptions options);

  std::string_view kind() const override { return options_.depthwise ? "depthwise_conv" : "conv2d"; }
  Shape infer(const std::vector<Shape>& inputs) const override;
  std::vector<ParamSpec> params(const std::vector<Shape>& inputs) const override;
  std::size_t workspace_bytes(const std::vector<Shape>& inputs, Pass, ConvScheme,
                              std::int64_t channel_block, DType dtype, const KernelQueries&) const override;
  bool has_16bit_kernels() const override { return true; }
  bool backward_reads_input(int) const override { return true; }  // for dW
  bool backward_reads_output() const override { return false; }
  void forward(Kernels&, const LayerArgs&) const override;
  void backward(Kernels&, const LayerArgs&) const override;
  double forward_flops(const std::vector<Shape>& inputs) const override;

  ConvShape conv_shape(const Shape& input, std::int64_t channel_block = 0, DType dtype = DType::f32) const;
  const Conv2dOptions& options() const { return options_; }

 private:
  Conv2dOptions options_;
};

}  // namespace tidepool
