// Small networks for the tests that train: every layer kind, fan-out and residual
// joins, at sizes that train in milliseconds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/layers/add.h"
#include "engine/layers/batchnorm.h"
#include "engine/layers/conv2d.h"
#include "engine/layers/dropout.h"
#include "engine/layers/flatten.h"
#include "engine/layers/linear.h"
#include "engine/layers/pooling.h"
#include "engine/layers/relu.h"
#include "engine/layers/softmax_xent.h"
#include "engine/core/network.h"

namespace tidepool::testing {

// conv-bn-relu, a residual block (fan-out of `a` into conv and add),
// max-pool, dropout, global pool, linear: every layer kind the engine has.
inline Network residual_net(bool with_batchnorm = true, bool with_dropout = true,
                            std::int64_t classes = 4) {
  Network n("residual", {3, 8, 8}, classes);
  std::string x = n.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 8, .padding = 1}), {"data"});
  if (with_batchnorm) x = n.add(std::make_unique<BatchNorm>("bn1"), {x});
  const std::string a = n.add(std::make_unique<Relu>("relu1"), {x});
  x = n.add(std::make_unique<Conv2d>("conv2", Conv2dOptions{.out_channels = 8, .padding = 1}), {a});
  x = n.add(std::make_unique<Relu>("relu2"), {x});
  x = n.add(std::make_unique<Conv2d>("dw", Conv2dOptions{.out_channels = 8, .padding = 1, .depthwise = true}), {x});
  x = n.add(std::make_unique<Add>("add"), {x, a});
  x = n.add(std::make_unique<Pool2d>("pool", PoolOptions{.kind = PoolKind::max}), {x});
  x = n.add(std::make_unique<Pool2d>("avg", PoolOptions{.kind = PoolKind::avg, .kernel = 2, .stride = 1}), {x});
  if (with_dropout) x = n.add(std::make_unique<Dropout>("drop", 0.25f), {x});
  const std::string gap = n.add(std::make_unique<Pool2d>("gap", PoolOptions{.global = true}), {x});
  x = n.add(std::make_unique<Flatten>("flatten"), {gap});
  x = n.add(std::make_unique<Linear>("fc", classes), {x});
  n.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {x, "labels"});
  return n;
}

// resnet's basic block at residual_net's input: conv-bn-relu, conv-bn, the
// join with the block's input, and a ReLU after it, so that --fuse relu
// (engine/core/fusion.h) fuses a batch norm's and an add's ReLU.
inline Network basic_block_net(std::int64_t classes = 4) {
  Network n("basic_block", {3, 8, 8}, classes);
  std::string x = n.add(std::make_unique<Conv2d>("conv0", Conv2dOptions{.out_channels = 8, .padding = 1}), {"data"});
  x = n.add(std::make_unique<BatchNorm>("bn0"), {x});
  const std::string in = n.add(std::make_unique<Relu>("relu0"), {x});
  x = n.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 8, .padding = 1}), {in});
  x = n.add(std::make_unique<BatchNorm>("bn1"), {x});
  x = n.add(std::make_unique<Relu>("relu1"), {x});
  x = n.add(std::make_unique<Conv2d>("conv2", Conv2dOptions{.out_channels = 8, .padding = 1}), {x});
  x = n.add(std::make_unique<BatchNorm>("bn2"), {x});
  x = n.add(std::make_unique<Add>("add"), {x, in});
  x = n.add(std::make_unique<Relu>("relu2"), {x});
  x = n.add(std::make_unique<Pool2d>("gap", PoolOptions{.kind = PoolKind::avg, .global = true}), {x});
  x = n.add(std::make_unique<Flatten>("flatten"), {x});
  x = n.add(std::make_unique<Linear>("fc", classes), {x});
  n.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {x, "labels"});
  return n;
}

}  // namespace tidepool::testing
