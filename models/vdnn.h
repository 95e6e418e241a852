// The network vDNN++ constructed to show its gain on "fast compute" layers
// interspersed among "long compute" ones (Shriram, Garg and Kulkarni,
// "Dynamic Memory Management for GPU-based training of Deep Neural
// Networks", IPDPS 2019, Table III):
//
//   Layer            Output size        Filter size
//   CONV_1           224 x 224 x 64     3x3, 64
//   CONV_2           224 x 224 x 64     [1x1, 64; 5x5, 64] x 5
//   Max Pool_1       1 x 1 x 64         224 x 224
//   CONV_3           1 x 1 x 3          1x1, 3
//   Fully Connected  2                  2 output neurons
//   Softmax          2
//
// The table is for ImageNet-size input; imagenet uses it as is, cifar the
// same structure on 32x32 (the max-pool window becomes 32 x 32). Our reading
// of what the table leaves open:
//   - every conv keeps the spatial size (3x3 pad 1, 5x5 pad 2, 1x1 pad 0),
//     as the output sizes require, and has a bias;
//   - each conv is followed by a ReLU (the table, like VGG's, lists only the
//     weighted layers) and there is no batchnorm, as in the paper's plain
//     cuDNN layer library;
//   - in each of the five CONV_2 repetitions the 1x1 conv comes first, in
//     table order;
//   - the fully connected layer has `classes` outputs (the table's 2 when
//     classes is 2), followed by the softmax-cross-entropy loss.
// Parameters: 535,115 for the table's 2 classes, 539,107 for 1000 classes
// and 535,147 for 10 (the classifier has 4 * classes).
//
// Names: conv1, relu1, conv2.<i>.conv1x1, conv2.<i>.relu1x1,
// conv2.<i>.conv5x5, conv2.<i>.relu5x5 (i = 0..4), pool1, conv3, relu3,
// flatten, fc1, loss.
#pragma once

#include <cstdint>

#include "engine/core/network.h"
#include "models/registry.h"

namespace tidepool::models {

// Named "vdnn_constructed".
Network vdnn_constructed(InputKind input, std::int64_t classes);

}  // namespace tidepool::models
