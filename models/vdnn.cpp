#include "models/vdnn.h"

#include <string>

#include "models/builder.h"

namespace tidepool::models {
namespace {

// Table III's repetition count for CONV_2. The paper notes that vDNN++'s
// advantage grows with it; five is the figure it measured.
constexpr int kConv2Repetitions = 5;

std::string conv_relu(NetBuilder& b, const std::string& conv_name, const std::string& relu_name,
                      const std::string& x, std::int64_t out_channels, std::int64_t kernel) {
  // "Same" padding: every conv in Table III keeps the 224 x 224 size.
  const Conv2dOptions options = conv_options(out_channels, kernel, 1, kernel / 2, /*bias=*/true);
  return b.relu(relu_name, b.conv(conv_name, x, options));
}

}  // namespace

Network vdnn_constructed(InputKind input, std::int64_t classes) {
  NetBuilder b("vdnn_constructed", input, classes);
  std::string x = conv_relu(b, "conv1", "relu1", b.input(), 64, 3);
  for (int i = 0; i < kConv2Repetitions; ++i) {
    const std::string p = "conv2." + std::to_string(i) + ".";
    x = conv_relu(b, p + "conv1x1", p + "relu1x1", x, 64, 1);
    x = conv_relu(b, p + "conv5x5", p + "relu5x5", x, 64, 5);
  }
  // Max Pool_1 covers the whole map (224 x 224, or 32 x 32 on CIFAR): a
  // global max-pool, which Pool2d expresses as one window of the image size.
  const std::int64_t size = b.image_size();
  x = b.max_pool("pool1", x, size, size);
  x = conv_relu(b, "conv3", "relu3", x, 3, 1);
  const std::string logits = b.linear("fc1", b.flatten("flatten", x), classes);
  return std::move(b).finish(logits);
}

}  // namespace tidepool::models
