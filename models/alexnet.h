// AlexNet (Krizhevsky et al., 2012), single-tower form.
//
// imagenet: torchvision's alexnet exactly. Features: conv 11x11/4 pad 2 (64)
//   - ReLU - max-pool 3/2 - conv 5x5 pad 2 (192) - ReLU - max-pool 3/2 -
//   conv 3x3 (384) - ReLU - conv 3x3 (256) - ReLU - conv 3x3 (256) - ReLU -
//   max-pool 3/2, taking 224 -> 55 -> 27 -> 13 -> 6. torchvision's
//   AdaptiveAvgPool2d((6, 6)) is the identity at 224x224 and is left out.
//   Classifier: Dropout - Linear(9216, 4096) - ReLU - Dropout -
//   Linear(4096, 4096) - ReLU - Linear(4096, classes). 61,100,840
//   parameters for 1000 classes.
//
// cifar: our adaptation, chosen to keep what makes AlexNet AlexNet for a
//   memory planner - the same five conv widths (64, 192, 384, 256, 256),
//   three max-pools and a three-layer classifier that holds most of the
//   weights - while fitting 32x32 input:
//     - the 11x11 stride-4 stem becomes a 3x3 stride-1 conv (pad 1), the
//       usual CIFAR stem (an 11x11/4 stem would leave 8x8 maps at once);
//     - the overlapping 3/2 max-pools become 2x2/2, so 32 -> 16 -> 8 -> 4;
//     - the classifier reads 256 x 4 x 4 = 4096 features and keeps the
//       4096-wide hidden layers: Dropout - Linear(4096, 4096) - ReLU -
//       Dropout - Linear(4096, 4096) - ReLU - Linear(4096, classes).
//   All convs and linears have bias, as in the original. 36,051,786
//   parameters for 10 classes (2,448,192 in the convs).
//
// Names: conv1..conv5, relu1..relu5, pool1, pool2, pool5, flatten, drop6,
// fc6, relu6, drop7, fc7, relu7, fc8, loss (Caffe's, whose layer numbering
// torchvision's indices follow).
#pragma once

#include <cstdint>

#include "engine/core/network.h"
#include "models/registry.h"

namespace tidepool::models {

// Named "alexnet".
Network alexnet(InputKind input, std::int64_t classes);

}  // namespace tidepool::models
