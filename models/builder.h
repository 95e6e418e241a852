// A thin helper over tidepool::Network for the zoo's model files: one call
// per layer, each returning the name of the tensor it produced, so a model
// reads like its PyTorch definition:
//
//   NetBuilder b("resnet18", InputKind::imagenet, 1000);
//   auto x = b.conv("conv1", b.input(), conv_options(64, 7, 2, 3));
//   x = b.relu("relu", b.bn("bn1", x));
//   ...
//   return std::move(b).finish(logits);
//
// Layer names are the tensor names, so they must be unique in a network;
// Network::add rejects duplicates, and the zoo's names follow torchvision
// ("layer1.0.conv1") wherever torchvision has a counterpart.
#pragma once

#include <cstdint>
#include <string>

#include "engine/layers/conv2d.h"
#include "engine/core/network.h"
#include "models/registry.h"

namespace tidepool::models {

// Conv2dOptions in PyTorch's argument order (the designated-initialiser form
// is long enough that every model would wrap it anyway).
Conv2dOptions conv_options(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
                           std::int64_t padding, bool bias = false);

class NetBuilder {
 public:
  NetBuilder(std::string name, InputKind input, std::int64_t classes);

  const std::string& input() const { return input_; }  // "data"
  std::int64_t classes() const { return classes_; }
  InputKind input_kind() const { return kind_; }
  // Height (== width) of the input images.
  std::int64_t image_size() const;

  std::string conv(const std::string& name, const std::string& x, Conv2dOptions options);
  std::string bn(const std::string& name, const std::string& x);
  std::string relu(const std::string& name, const std::string& x);
  std::string max_pool(const std::string& name, const std::string& x, std::int64_t kernel,
                       std::int64_t stride, std::int64_t padding = 0);
  std::string global_avg_pool(const std::string& name, const std::string& x);
  std::string add(const std::string& name, const std::string& a, const std::string& b);
  std::string flatten(const std::string& name, const std::string& x);
  std::string linear(const std::string& name, const std::string& x, std::int64_t out_features);
  std::string dropout(const std::string& name, const std::string& x, float p);

  // conv (bias off: batchnorm's beta does its job) -> batchnorm -> relu,
  // named `conv_name`, `bn_name`, `relu_name`. An empty relu_name leaves the
  // relu out (the last batchnorm of a residual branch).
  std::string conv_bn_relu(const std::string& conv_name, const std::string& bn_name,
                           const std::string& relu_name, const std::string& x,
                           Conv2dOptions options);

  // Adds the loss "loss" over {logits, "labels"} and hands the network over.
  Network finish(const std::string& logits) &&;

 private:
  Network net_;
  InputKind kind_;
  std::int64_t classes_;
  std::string input_ = kDataTensor;
};

}  // namespace tidepool::models
