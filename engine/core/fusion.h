// Layer fusion (--fuse): a rewrite of a network into one that computes the
// same function in fewer sweeps over memory.
//
//   Network net = fuse(models::make_model("resnet56", InputKind::cifar, 10), Fusion::relu);
//
// Fusion::relu folds each ReLU into the layer before it when that layer has
// a fused form (Layer::with_relu: batch norm and the residual add) and the
// ReLU is the only reader of its output: oneDNN's fused batch-norm ReLU and
// an add that clamps as it sums. The fused layer keeps the first layer's
// name (so its parameters and checkpoints keep theirs) and later layers
// read it where they read the ReLU. A ReLU's forward and backward sweeps
// over memory are gone. Memory goes the other way, a little: a fused batch
// norm keeps a mask of where its ReLU passed until backward, and a fused
// add's backward holds its output, its gradient and both inputs' gradients
// at once (the README's *Fused ReLUs* has the figures).
//
// Fusion::none, the default, keeps every layer its own pass, as the papers
// this project measures against count them (vDNN, SmartPool, AutoSwap,
// Zhuang and AccUDNN plan a ReLU as a layer with its own output).
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/choices.h"
#include "engine/core/network.h"

namespace tidepool {

enum class Fusion : std::uint8_t { none, relu };
inline constexpr Choice<Fusion> kFusions[] = {
    {Fusion::none, "none", "every layer its own pass, as the papers plan them"},
    {Fusion::relu, "relu", "each ReLU after a batch norm or residual add computed in that layer's pass"},
};
constexpr std::span<const Choice<Fusion>> choices(Fusion) { return kFusions; }

// `net` rewritten as `fusion` says (Fusion::none: as it is). `sync_bn`:
// batch norms keep their ReLUs, as the --sync-bn kernels that sum over the
// ranks have no fused form (the residual adds still fuse theirs).
Network fuse(Network net, Fusion fusion, bool sync_bn = false);

}  // namespace tidepool
