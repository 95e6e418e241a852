#include "models/mobilenet.h"

#include <array>
#include <string>

#include "models/builder.h"

namespace tidepool::models {
namespace {

struct Separable {
  std::int64_t out_channels;
  std::int64_t stride;
};

// Table 1 of the paper, one row per depthwise-separable block.
constexpr std::array<Separable, 13> kBlocks = {{{64, 1},
                                                {128, 2},
                                                {128, 1},
                                                {256, 2},
                                                {256, 1},
                                                {512, 2},
                                                {512, 1},
                                                {512, 1},
                                                {512, 1},
                                                {512, 1},
                                                {512, 1},
                                                {1024, 2},
                                                {1024, 1}}};

}  // namespace

Network mobilenet_v1(InputKind input, std::int64_t classes) {
  NetBuilder b("mobilenet", input, classes);
  // On 32x32 images a stride-2 stem would leave 1x1 maps before the last
  // block; the CIFAR variant keeps the first layer at full resolution.
  const std::int64_t stem_stride = input == InputKind::imagenet ? 2 : 1;
  std::string x = b.conv_bn_relu("conv1", "bn1", "relu1", b.input(),
                                 conv_options(32, 3, stem_stride, 1));
  std::int64_t channels = 32;
  for (std::size_t i = 0; i < kBlocks.size(); ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    Conv2dOptions depthwise = conv_options(channels, 3, kBlocks[i].stride, 1);
    depthwise.depthwise = true;
    x = b.conv_bn_relu(p + "dw_conv", p + "dw_bn", p + "dw_relu", x, depthwise);
    x = b.conv_bn_relu(p + "pw_conv", p + "pw_bn", p + "pw_relu", x,
                       conv_options(kBlocks[i].out_channels, 1, 1, 0));
    channels = kBlocks[i].out_channels;
  }
  x = b.flatten("flatten", b.global_avg_pool("avgpool", x));
  const std::string logits = b.linear("fc", x, classes);
  return std::move(b).finish(logits);
}

}  // namespace tidepool::models
