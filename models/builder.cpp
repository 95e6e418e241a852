#include "models/builder.h"

#include <memory>
#include <utility>

#include "engine/layers/add.h"
#include "engine/layers/batchnorm.h"
#include "engine/layers/dropout.h"
#include "engine/layers/flatten.h"
#include "engine/layers/linear.h"
#include "engine/layers/pooling.h"
#include "engine/layers/relu.h"
#include "engine/layers/softmax_xent.h"

namespace tidepool::models {

Conv2dOptions conv_options(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
                           std::int64_t padding, bool bias) {
  return Conv2dOptions{.out_channels = out_channels,
                       .kernel = kernel,
                       .stride = stride,
                       .padding = padding,
                       .bias = bias};
}

NetBuilder::NetBuilder(std::string name, InputKind input, std::int64_t classes)
    : net_(std::move(name), image_shape(input), classes), kind_(input), classes_(classes) {}

std::int64_t NetBuilder::image_size() const { return net_.image_shape()[1]; }

std::string NetBuilder::conv(const std::string& name, const std::string& x, Conv2dOptions options) {
  return net_.add(std::make_unique<Conv2d>(name, options), {x});
}

std::string NetBuilder::bn(const std::string& name, const std::string& x) {
  return net_.add(std::make_unique<BatchNorm>(name), {x});
}

std::string NetBuilder::relu(const std::string& name, const std::string& x) {
  return net_.add(std::make_unique<Relu>(name), {x});
}

std::string NetBuilder::max_pool(const std::string& name, const std::string& x, std::int64_t kernel,
                                 std::int64_t stride, std::int64_t padding) {
  return net_.add(std::make_unique<Pool2d>(name, PoolOptions{.kind = PoolKind::max,
                                                             .kernel = kernel,
                                                             .stride = stride,
                                                             .padding = padding}),
                  {x});
}

std::string NetBuilder::global_avg_pool(const std::string& name, const std::string& x) {
  return net_.add(
      std::make_unique<Pool2d>(name, PoolOptions{.kind = PoolKind::avg, .global = true}), {x});
}

std::string NetBuilder::add(const std::string& name, const std::string& a, const std::string& b) {
  return net_.add(std::make_unique<Add>(name), {a, b});
}

std::string NetBuilder::flatten(const std::string& name, const std::string& x) {
  return net_.add(std::make_unique<Flatten>(name), {x});
}

std::string NetBuilder::linear(const std::string& name, const std::string& x,
                               std::int64_t out_features) {
  return net_.add(std::make_unique<Linear>(name, out_features, /*bias=*/true), {x});
}

std::string NetBuilder::dropout(const std::string& name, const std::string& x, float p) {
  return net_.add(std::make_unique<Dropout>(name, p), {x});
}

std::string NetBuilder::conv_bn_relu(const std::string& conv_name, const std::string& bn_name,
                                     const std::string& relu_name, const std::string& x,
                                     Conv2dOptions options) {
  options.bias = false;
  std::string y = bn(bn_name, conv(conv_name, x, options));
  return relu_name.empty() ? y : relu(relu_name, y);
}

Network NetBuilder::finish(const std::string& logits) && {
  net_.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {logits, kLabelsTensor});
  return std::move(net_);
}

}  // namespace tidepool::models
