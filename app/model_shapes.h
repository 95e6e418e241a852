// A network at a dataset's shapes (input size and classes) without reading
// the dataset: for the commands that only plan or model (plan, profile,
// tune).
#pragma once

#include <string>

#include "engine/core/fusion.h"
#include "engine/core/network.h"
#include "models/registry.h"

namespace tidepool::app {

// The models' input for a dataset: imagenet and imagenet-shapes feed
// 3x224x224 images, the others CIFAR's 3x32x32.
models::InputKind input_for_dataset(const std::string& dataset);

// cifar10, generated and fashion-mnist (fed as CIFAR's 3x32x32,
// datasets/fashion_mnist.h): 10 classes; cifar100: 100; imagenet and
// imagenet-shapes: 224x224, 1000 classes. Throws std::invalid_argument for
// another dataset or an unknown model. `fusion` and `sync_bn`: as a run
// with --fuse and --sync-bn builds it (engine/core/fusion.h).
Network model_for_dataset(const std::string& model, const std::string& dataset, Fusion fusion = Fusion::none,
                          bool sync_bn = false);

}  // namespace tidepool::app
