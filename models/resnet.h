// Residual networks.
//
// cifar_resnet: He et al., "Deep Residual Learning for Image Recognition"
// (CVPR 2016), section 4.2: the 6n+2-layer CIFAR networks (resnet20/32/44/
// 56/110): a 3x3 conv with 16 channels, three stages of n basic blocks with
// 16, 32 and 64 channels (strides 1, 2, 2), global average pooling and one
// linear layer. The paper's CIFAR runs use option A shortcuts (identity with
// zero-padded channels and stride-2 subsampling); the engine has no
// zero-padding or strided-slice layer, so where the shape changes we use
// option B, a 1x1 conv + batchnorm projection (the paper's ImageNet choice).
// That adds two projections (16->32 and 32->64): 2,752 parameters over the
// option-A count, so resnet20 has 272,474 parameters for 10 classes instead
// of the often-quoted 269,722 (0.27M either way).
//
// resnet: ResNet-18/34/50/101/152.
//   imagenet  torchvision's networks exactly (7x7 stride-2 stem, 3x3 stride-2
//             max-pool, stride on the 3x3 conv of a bottleneck, "v1.5"),
//             parameter counts equal torchvision's.
//   cifar     the usual CIFAR adaptation (kuangliu/pytorch-cifar): a 3x3
//             stride-1 stem with 64 channels and no max-pool, stages with
//             strides 1, 2, 2, 2 (32 -> 32 -> 16 -> 8 -> 4), global average
//             pooling, Linear(512 * expansion, classes).
// Both use projection shortcuts (1x1 conv + batchnorm) where a block changes
// the shape, and convs without bias (each is followed by batchnorm).
//
// Layer names follow torchvision: conv1, bn1, relu, maxpool, layer1.0.conv1,
// layer1.0.bn1, layer1.0.relu1, ..., layer2.0.downsample.0 (the projection
// conv), layer2.0.downsample.1 (its batchnorm), layer1.0.add, avgpool,
// flatten, fc, loss. torchvision reuses one ReLU module per block; here
// each ReLU is a layer with its own name (relu1, relu2[, relu3], the last one
// after the residual add).
#pragma once

#include <cstdint>

#include "engine/core/network.h"
#include "models/registry.h"

namespace tidepool::models {

// depth = 6n + 2 with n >= 1 (20, 32, 44, 56, 110, ...); named "resnet<depth>".
// Throws std::invalid_argument for other depths.
Network cifar_resnet(int depth, std::int64_t classes);

// depth in {18, 34, 50, 101, 152}; named "resnet<depth>". Throws
// std::invalid_argument for other depths.
Network resnet(int depth, InputKind input, std::int64_t classes);

}  // namespace tidepool::models
