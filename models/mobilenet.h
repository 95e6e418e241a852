// MobileNet v1 (Howard et al., 2017), width multiplier 1.0, 224 resolution.
//
// A 3x3 conv with 32 channels, then 13 depthwise-separable blocks (3x3
// depthwise conv - batchnorm - ReLU - 1x1 pointwise conv - batchnorm - ReLU)
// with output channels 64, 128/2, 128, 256/2, 256, 512/2, 5 x 512, 1024/2,
// 1024 (/2: the depthwise conv has stride 2), global average pooling and
// Linear(1024, classes). Convs have no bias (each is followed by batchnorm);
// the linear layer has one. The paper's final dropout is left out, as in the
// reference implementations whose parameter counts we match.
//
//   imagenet  a stride-2 stem: 224 -> 112 -> ... -> 7; 4,231,976 parameters
//             for 1000 classes.
//   cifar     the usual CIFAR adaptation (kuangliu/pytorch-cifar): the same
//             network with a stride-1 stem: 32 -> 32 -> ... -> 2, so the
//             only parameter difference is the classifier (3,217,226 for 10
//             classes).
//
// Names: conv1, bn1, relu1; layers.<i>.dw_conv, layers.<i>.dw_bn,
// layers.<i>.dw_relu, layers.<i>.pw_conv, layers.<i>.pw_bn,
// layers.<i>.pw_relu (i = 0..12); avgpool, flatten, fc, loss.
#pragma once

#include <cstdint>

#include "engine/core/network.h"
#include "models/registry.h"

namespace tidepool::models {

// Named "mobilenet".
Network mobilenet_v1(InputKind input, std::int64_t classes);

}  // namespace tidepool::models
