#include "models/resnet.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "models/builder.h"

namespace tidepool::models {
namespace {

enum class BlockKind { basic, bottleneck };

// Output channels of a block relative to its `planes` (torchvision's name).
std::int64_t expansion(BlockKind kind) { return kind == BlockKind::basic ? 1 : 4; }

struct Stage {
  std::int64_t planes;
  int blocks;
  std::int64_t stride;  // of the first block; the others keep the size
};

// Where the block changes the shape, the identity cannot be added: project
// with a strided 1x1 conv + batchnorm (option B), as torchvision does.
std::string shortcut(NetBuilder& b, const std::string& prefix, const std::string& x,
                     std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride) {
  if (stride == 1 && in_channels == out_channels) return x;
  return b.conv_bn_relu(prefix + "downsample.0", prefix + "downsample.1", "", x,
                        conv_options(out_channels, 1, stride, 0));
}

// 3x3 -> 3x3, plus the shortcut, then ReLU.
std::string basic_block(NetBuilder& b, const std::string& prefix, const std::string& x,
                        std::int64_t in_channels, std::int64_t planes, std::int64_t stride) {
  std::string y = b.conv_bn_relu(prefix + "conv1", prefix + "bn1", prefix + "relu1", x,
                                 conv_options(planes, 3, stride, 1));
  y = b.conv_bn_relu(prefix + "conv2", prefix + "bn2", "", y, conv_options(planes, 3, 1, 1));
  const std::string s = shortcut(b, prefix, x, in_channels, planes, stride);
  return b.relu(prefix + "relu2", b.add(prefix + "add", y, s));
}

// 1x1 reduce -> 3x3 (carries the stride, torchvision's "v1.5") -> 1x1
// expand to 4 * planes, plus the shortcut, then ReLU.
std::string bottleneck_block(NetBuilder& b, const std::string& prefix, const std::string& x,
                             std::int64_t in_channels, std::int64_t planes, std::int64_t stride) {
  const std::int64_t out_channels = planes * expansion(BlockKind::bottleneck);
  std::string y = b.conv_bn_relu(prefix + "conv1", prefix + "bn1", prefix + "relu1", x,
                                 conv_options(planes, 1, 1, 0));
  y = b.conv_bn_relu(prefix + "conv2", prefix + "bn2", prefix + "relu2", y,
                     conv_options(planes, 3, stride, 1));
  y = b.conv_bn_relu(prefix + "conv3", prefix + "bn3", "", y, conv_options(out_channels, 1, 1, 0));
  const std::string s = shortcut(b, prefix, x, in_channels, out_channels, stride);
  return b.relu(prefix + "relu3", b.add(prefix + "add", y, s));
}

// The stages (layer1, layer2, ...), global average pooling and the
// classifier, shared by every ResNet here; `x` has `channels` channels.
Network finish_resnet(NetBuilder b, std::string x, std::int64_t channels, BlockKind kind,
                      const std::vector<Stage>& stages) {
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const Stage& stage = stages[s];
    for (int i = 0; i < stage.blocks; ++i) {
      const std::string prefix = "layer" + std::to_string(s + 1) + "." + std::to_string(i) + ".";
      const std::int64_t stride = i == 0 ? stage.stride : 1;
      x = kind == BlockKind::basic
              ? basic_block(b, prefix, x, channels, stage.planes, stride)
              : bottleneck_block(b, prefix, x, channels, stage.planes, stride);
      channels = stage.planes * expansion(kind);
    }
  }
  x = b.global_avg_pool("avgpool", x);
  x = b.flatten("flatten", x);
  const std::string logits = b.linear("fc", x, b.classes());
  return std::move(b).finish(logits);
}

struct ImageNetDepth {
  BlockKind kind;
  int blocks[4];
};

ImageNetDepth imagenet_depth(int depth) {
  switch (depth) {
    case 18: return {BlockKind::basic, {2, 2, 2, 2}};
    case 34: return {BlockKind::basic, {3, 4, 6, 3}};
    case 50: return {BlockKind::bottleneck, {3, 4, 6, 3}};
    case 101: return {BlockKind::bottleneck, {3, 4, 23, 3}};
    case 152: return {BlockKind::bottleneck, {3, 8, 36, 3}};
    default:
      throw std::invalid_argument("resnet: depth " + std::to_string(depth) +
                                  " is not one of 18, 34, 50, 101, 152");
  }
}

}  // namespace

Network cifar_resnet(int depth, std::int64_t classes) {
  if (depth < 8 || (depth - 2) % 6 != 0)
    throw std::invalid_argument("cifar_resnet: depth " + std::to_string(depth) +
                                " is not 6n + 2 with n >= 1 (20, 32, 44, 56, 110, ...)");
  const int n = (depth - 2) / 6;
  NetBuilder b("resnet" + std::to_string(depth), InputKind::cifar, classes);
  std::string x = b.conv_bn_relu("conv1", "bn1", "relu", b.input(), conv_options(16, 3, 1, 1));
  return finish_resnet(std::move(b), x, 16, BlockKind::basic,
                       {{16, n, 1}, {32, n, 2}, {64, n, 2}});
}

Network resnet(int depth, InputKind input, std::int64_t classes) {
  const ImageNetDepth d = imagenet_depth(depth);
  NetBuilder b("resnet" + std::to_string(depth), input, classes);
  std::string x;
  if (input == InputKind::imagenet) {
    // 224 -> 112 (conv) -> 56 (max-pool), as torchvision.
    x = b.conv_bn_relu("conv1", "bn1", "relu", b.input(), conv_options(64, 7, 2, 3));
    x = b.max_pool("maxpool", x, 3, 2, 1);
  } else {
    // A 7x7/2 stem and a max-pool would leave 8x8 maps for layer1 on 32x32
    // images; the CIFAR adaptation keeps full resolution instead.
    x = b.conv_bn_relu("conv1", "bn1", "relu", b.input(), conv_options(64, 3, 1, 1));
  }
  return finish_resnet(std::move(b), x, 64, d.kind,
                       {{64, d.blocks[0], 1},
                        {128, d.blocks[1], 2},
                        {256, d.blocks[2], 2},
                        {512, d.blocks[3], 2}});
}

}  // namespace tidepool::models
