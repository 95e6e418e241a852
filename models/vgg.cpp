#include "models/vgg.h"

#include <array>
#include <stdexcept>
#include <string>

#include "models/builder.h"

namespace tidepool::models {
namespace {

constexpr std::array<std::int64_t, 5> kGroupChannels = {64, 128, 256, 512, 512};

std::array<int, 5> group_sizes(int depth) {
  switch (depth) {
    case 11: return {1, 1, 2, 2, 2};
    case 13: return {2, 2, 2, 2, 2};
    case 16: return {2, 2, 3, 3, 3};
    case 19: return {2, 2, 4, 4, 4};
    default:
      throw std::invalid_argument("vgg: depth " + std::to_string(depth) +
                                  " is not one of 11, 13, 16, 19");
  }
}

// The conv groups, each closed by a 2x2 max-pool. With batchnorm, convs drop
// their bias (batchnorm's beta replaces it); without, they keep it, as
// torchvision's plain VGGs do. `extra` more convs per group (vDNN++'s deep
// VGGs) follow the group's own convs and are named apart from them.
std::string features(NetBuilder& b, const std::array<int, 5>& sizes, int extra, bool batchnorm) {
  std::string x = b.input();
  for (int g = 0; g < 5; ++g) {
    const std::string group = std::to_string(g + 1);
    const Conv2dOptions options = conv_options(kGroupChannels[g], 3, 1, 1, /*bias=*/!batchnorm);
    for (int i = 0; i < sizes[g] + extra; ++i) {
      const std::string id = i < sizes[g] ? group + "_" + std::to_string(i + 1)
                                          : group + "_extra" + std::to_string(i - sizes[g] + 1);
      if (batchnorm) {
        x = b.conv_bn_relu("conv" + id, "bn" + id, "relu" + id, x, options);
      } else {
        x = b.relu("relu" + id, b.conv("conv" + id, x, options));
      }
    }
    x = b.max_pool("pool" + group, x, 2, 2);
  }
  return x;
}

// torchvision's VGG classifier on the 512 x 7 x 7 pool5 output.
Network imagenet_classifier(NetBuilder b, std::string x) {
  x = b.flatten("flatten", x);
  x = b.dropout("drop6", b.relu("relu6", b.linear("fc6", x, 4096)), 0.5f);
  x = b.dropout("drop7", b.relu("relu7", b.linear("fc7", x, 4096)), 0.5f);
  const std::string logits = b.linear("fc8", x, b.classes());
  return std::move(b).finish(logits);
}

}  // namespace

Network vgg(int depth, InputKind input, std::int64_t classes) {
  const std::array<int, 5> sizes = group_sizes(depth);
  NetBuilder b("vgg" + std::to_string(depth), input, classes);
  if (input == InputKind::imagenet) {
    const std::string x = features(b, sizes, 0, /*batchnorm=*/false);
    return imagenet_classifier(std::move(b), x);
  }
  // 32x32 after five pools is 512 x 1 x 1: one linear layer classifies it.
  const std::string x = features(b, sizes, 0, /*batchnorm=*/true);
  const std::string logits = b.linear("fc", b.flatten("flatten", x), classes);
  return std::move(b).finish(logits);
}

Network deep_vgg(int extra_per_group, std::int64_t classes) {
  if (extra_per_group < 0)
    throw std::invalid_argument("deep_vgg: extra_per_group must be >= 0, not " +
                                std::to_string(extra_per_group));
  NetBuilder b("vgg" + std::to_string(16 + 5 * extra_per_group), InputKind::imagenet, classes);
  const std::string x = features(b, group_sizes(16), extra_per_group, /*batchnorm=*/false);
  return imagenet_classifier(std::move(b), x);
}

}  // namespace tidepool::models
