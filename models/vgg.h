// VGG networks (Simonyan & Zisserman, 2015): five groups of 3x3 convs with
// 64, 128, 256, 512 and 512 channels, each group closed by a 2x2 max-pool.
// Group sizes: vgg11 1-1-2-2-2, vgg13 2-2-2-2-2, vgg16 2-2-3-3-3,
// vgg19 2-2-4-4-4.
//
// vgg (imagenet): torchvision's vgg11/13/16/19 without batchnorm: convs with
//   bias, ReLU, and the classifier Linear(25088, 4096)-ReLU-Dropout-
//   Linear(4096, 4096)-ReLU-Dropout-Linear(4096, classes). torchvision's
//   AdaptiveAvgPool2d((7, 7)) is the identity on 224x224 input (pool5 is
//   already 7x7), so it is left out. vgg16 has 138,357,544 parameters.
//
// vgg (cifar): the common "VGG-BN for CIFAR" variant (as in kuangliu/
//   pytorch-cifar): every conv is conv3x3 (no bias) - batchnorm - ReLU, the
//   five max-pools take 32x32 down to 1x1, and the classifier is a single
//   Linear(512, classes). kuangliu's convs keep a bias in front of the
//   batchnorm; ours drop it (batchnorm's beta makes it redundant), so each
//   network has (sum of conv channels) fewer parameters than kuangliu's.
//
// deep_vgg (imagenet only): vDNN++'s VGG-116 and VGG-191 (Shriram et al.,
//   "Dynamic Memory Management for GPU-based training of Deep Neural
//   Networks", IPDPS 2019, Table IV): VGG-16 with 20 or 35 extra 3x3 conv
//   layers (+ ReLU) added to each of the five conv groups, so 13 + 5 * 20 =
//   113 or 13 + 5 * 35 = 188 convs plus the three linear layers. The extra
//   convs keep the group's channel count and sit after the group's own convs,
//   before its max-pool.
//
// Names (Caffe-style, which say where a layer sits): conv1_1, bn1_1 (cifar),
// relu1_1, ..., pool1, ..., the extra convs conv<g>_extra<i> and
// relu<g>_extra<i>, flatten, then fc6, relu6, drop6, fc7, relu7, drop7, fc8
// (imagenet) or fc (cifar), and loss.
#pragma once

#include <cstdint>

#include "engine/core/network.h"
#include "models/registry.h"

namespace tidepool::models {

// depth in {11, 13, 16, 19}; named "vgg<depth>". Throws
// std::invalid_argument for other depths.
Network vgg(int depth, InputKind input, std::int64_t classes);

// VGG-16 (imagenet, no batchnorm) with `extra_per_group` more convs in each
// group; named "vgg<16 + 5 * extra_per_group>" (vgg116 for 20, vgg191 for 35).
Network deep_vgg(int extra_per_group, std::int64_t classes);

}  // namespace tidepool::models
