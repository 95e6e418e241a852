#include "models/alexnet.h"

#include <string>

#include "models/builder.h"

namespace tidepool::models {
namespace {

std::string conv_relu(NetBuilder& b, const std::string& id, const std::string& x,
                      Conv2dOptions options) {
  options.bias = true;  // no batchnorm follows: the conv keeps its bias
  return b.relu("relu" + id, b.conv("conv" + id, x, options));
}

}  // namespace

Network alexnet(InputKind input, std::int64_t classes) {
  NetBuilder b("alexnet", input, classes);
  const bool imagenet = input == InputKind::imagenet;
  // Pooling: torchvision's overlapping 3x3/2 windows on ImageNet; plain
  // 2x2/2 halving on CIFAR so that three pools give 4x4 maps.
  const std::int64_t pool_kernel = imagenet ? 3 : 2;

  std::string x = imagenet ? conv_relu(b, "1", b.input(), conv_options(64, 11, 4, 2))
                           : conv_relu(b, "1", b.input(), conv_options(64, 3, 1, 1));
  x = b.max_pool("pool1", x, pool_kernel, 2);
  x = conv_relu(b, "2", x, conv_options(192, 5, 1, 2));
  x = b.max_pool("pool2", x, pool_kernel, 2);
  x = conv_relu(b, "3", x, conv_options(384, 3, 1, 1));
  x = conv_relu(b, "4", x, conv_options(256, 3, 1, 1));
  x = conv_relu(b, "5", x, conv_options(256, 3, 1, 1));
  x = b.max_pool("pool5", x, pool_kernel, 2);

  // torchvision's classifier order: dropout in front of each hidden linear.
  x = b.flatten("flatten", x);
  x = b.relu("relu6", b.linear("fc6", b.dropout("drop6", x, 0.5f), 4096));
  x = b.relu("relu7", b.linear("fc7", b.dropout("drop7", x, 0.5f), 4096));
  const std::string logits = b.linear("fc8", x, classes);
  return std::move(b).finish(logits);
}

}  // namespace tidepool::models
