// The model zoo: every network Tidepool can train, by name. Each model is
// built from engine layers only, for one or both input kinds:
//
//   cifar     3 x 32 x 32 images (CIFAR-10/100; classes usually 10 or 100)
//   imagenet  3 x 224 x 224 images (ImageNet; classes usually 1000)
//
// A name means a family, and the input kind picks the variant: "resnet18"
// on cifar is the CIFAR adaptation (3x3 stride-1 stem, no max-pool), on
// imagenet torchvision's network. Some names exist for one kind only (the
// 6n+2 CIFAR ResNets, the deep vDNN++ VGGs).
//
//   tidepool::Network net = tidepool::models::make_model("resnet56", InputKind::cifar, 10);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/network.h"

namespace tidepool::models {

enum class InputKind { cifar, imagenet };

std::string_view to_string(InputKind input);
// "cifar" or "imagenet"; throws std::invalid_argument for anything else.
InputKind parse_input_kind(std::string_view text);

// The image shape of an input kind, C, H, W.
Shape image_shape(InputKind input);

// Every registered model, in registry order (CIFAR-only families first).
std::vector<std::string> model_names();
// The models that have a variant for `input`.
std::vector<std::string> model_names(InputKind input);

// Whether `name` is registered and has a variant for `input`.
bool supports(std::string_view name, InputKind input);

// Builds the network. Throws std::invalid_argument naming the model and
// listing the valid names when `name` is unknown, naming the kinds it does
// support when it has no variant for `input`, and for classes <= 0.
Network make_model(std::string_view name, InputKind input, std::int64_t classes);

}  // namespace tidepool::models
