// --fuse relu: the rewrite folds each ReLU into the batch norm or residual
// add before it, keeping names and parameters; the fused network trains
// like the unfused one (to rounding), keeps the invariant that offloading,
// heuristics and transfers never change its bits, and plans what a run
// observes.
#include "engine/core/fusion.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/layers/add.h"
#include "engine/layers/batchnorm.h"
#include "engine/layers/conv2d.h"
#include "engine/layers/flatten.h"
#include "engine/layers/linear.h"
#include "engine/layers/pooling.h"
#include "engine/layers/relu.h"
#include "engine/layers/softmax_xent.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/memory_plan.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/batches.h"

namespace tidepool {
namespace {

std::map<std::string, int> kinds(const Network& net) {
  std::map<std::string, int> k;
  for (const Node& n : net.nodes()) ++k[std::string(n.layer->kind())];
  return k;
}

// Every parameter's name and shape, in network order.
std::vector<std::string> parameters(const Network& net) {
  const NetworkShapes s = net.shapes(2);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < net.nodes().size(); ++i)
    for (const ParamSpec& p : net.nodes()[i].layer->params(s.node_inputs[i]))
      out.push_back(net.nodes()[i].layer->name() + "." + p.suffix + " " + p.shape.str());
  return out;
}

Network resnet20() { return models::make_model("resnet20", models::InputKind::cifar, 10); }

TEST(Fusion, FoldsEveryReluOfAResnetIntoTheBatchNormOrAddBeforeIt) {
  const Network plain = resnet20();
  const Network fused = fuse(resnet20(), Fusion::relu);
  const auto before = kinds(plain), after = kinds(fused);
  ASSERT_EQ(before.at("relu"), 19) << "the stem's and two per block";
  EXPECT_EQ(after.count("relu"), 0u);
  EXPECT_EQ(after.at("batchnorm_relu"), 10) << "the stem's and each block's first";
  EXPECT_EQ(after.at("add_relu"), 9) << "each block's join";
  EXPECT_EQ(after.at("batchnorm"), before.at("batchnorm") - 10) << "the branches' last and the projections'";
  EXPECT_EQ(fused.nodes().size(), plain.nodes().size() - 19);
  EXPECT_EQ(parameters(fused), parameters(plain)) << "same names and shapes: checkpoints carry over";
  EXPECT_EQ(fused.parameter_count(), plain.parameter_count());
  EXPECT_EQ(fused.shapes(4).node_outputs.back(), plain.shapes(4).node_outputs.back());
  EXPECT_EQ(fused.nodes()[1].layer->name(), "bn1");
  EXPECT_EQ(fused.nodes()[2].inputs, std::vector<std::string>{"bn1"}) << "the next layer reads the fused output";
}

// Under --sync-bn the batch norms keep their ReLUs (the kernels that sum
// over the ranks have no fused form); the adds still fuse theirs.
TEST(Fusion, UnderSyncBnOnlyTheAddsFuse) {
  const auto k = kinds(fuse(resnet20(), Fusion::relu, /*sync_bn=*/true));
  EXPECT_EQ(k.at("add_relu"), 9);
  EXPECT_EQ(k.count("batchnorm_relu"), 0u);
  EXPECT_EQ(k.at("relu"), 10);
}

TEST(Fusion, NoneKeepsTheNetworkAsBuilt) {
  const Network fused = fuse(resnet20(), Fusion::none);
  EXPECT_EQ(kinds(fused), kinds(resnet20()));
}

// A ReLU stays its own layer where its input is read by another layer too
// (the ReLU's input must stay unclamped for it) or comes from a layer with
// no fused form (a convolution: vgg and alexnet keep theirs).
TEST(Fusion, KeepsAReluWhoseInputOthersReadOrWhoseLayerHasNoFusedForm) {
  Network n("mixed", {3, 8, 8}, 4);
  std::string x = n.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 8, .padding = 1}), {"data"});
  const std::string bn = n.add(std::make_unique<BatchNorm>("bn1"), {x});
  const std::string r1 = n.add(std::make_unique<Relu>("relu1"), {bn});
  x = n.add(std::make_unique<Add>("add"), {r1, bn});
  x = n.add(std::make_unique<Conv2d>("conv2", Conv2dOptions{.out_channels = 8, .padding = 1}), {x});
  x = n.add(std::make_unique<Relu>("relu2"), {x});
  x = n.add(std::make_unique<Pool2d>("gap", PoolOptions{.kind = PoolKind::avg, .global = true}), {x});
  x = n.add(std::make_unique<Flatten>("flatten"), {x});
  x = n.add(std::make_unique<Linear>("fc", 4), {x});
  n.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {x, "labels"});
  const Network fused = fuse(std::move(n), Fusion::relu);
  EXPECT_EQ(kinds(fused).at("relu"), 2);
  EXPECT_EQ(kinds(fused).count("batchnorm_relu"), 0u);
  EXPECT_EQ(fused.nodes().size(), 10u);
}

// resnet20 on 32x32 images: the real zoo network with both fused forms.
std::vector<float> trained(const Network& net, MemorySettings m, std::uint64_t* checksum = nullptr) {
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .memory = m, .seed = 3});
  for (unsigned i = 0; i < 3; ++i) {
    const testing::Batch b = testing::random_batch(8, 40 + i, {.pixels = 3 * 32 * 32, .classes = 10});
    trainer.train_step(b.images.data(), b.labels.data());
  }
  if (checksum) *checksum = trainer.param_checksum();
  return trainer.read_parameters();
}

TEST(Fusion, FusedResnetTrainsLikeTheUnfusedOne) {
  const std::vector<float> plain = trained(resnet20(), {});
  const std::vector<float> fused = trained(fuse(resnet20(), Fusion::relu), {});
  ASSERT_EQ(fused.size(), plain.size());
  double worst = 0;
  for (std::size_t i = 0; i < plain.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(fused[i] - plain[i])));
  EXPECT_LT(worst, 1e-4) << "the same function and gradients, summed in another order at most";
}

TEST(Fusion, FusedParametersAreBitIdenticalInEveryModeHeuristicAndTransfer) {
  const Network net = fuse(resnet20(), Fusion::relu);
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    std::uint64_t base = 0;
    trained(net, {.precision = p}, &base);
    for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv})
      for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
        std::uint64_t got = 0;
        trained(net, {.precision = p, .mode = mode, .transfer = transfer, .heuristic = "first-fit"}, &got);
        EXPECT_EQ(got, base) << to_string(p) << " " << to_string(mode) << " " << to_string(transfer);
      }
  }
}

// What fusion does to the plan: each batch norm with a ReLU saves a mask of
// a bit a value (the cpu device's channel-blocked layout) for backward,
// where it reads neither y nor its own output's gradient twice; the plan
// holds one tensor less per fused ReLU and its gradient, and a run in the
// planned pool observes the planned peak.
TEST(Fusion, FusedPlanSavesABitAValueForEachBatchNormsReluAndIsWhatARunObserves) {
  CpuKernels kernels;
  const Network plain = resnet20(), fused = fuse(resnet20(), Fusion::relu);
  const MemoryPlan a = plan_memory(plain, 8, {}, kernels);
  const MemoryPlan b = plan_memory(fused, 8, {}, kernels);
  std::size_t masks = 0, mask_count = 0, fused_values = 0;
  for (const PlannedTensor& t : b.train.tensors)
    if (t.info.name.ends_with(".relu_mask")) {
      masks += t.info.bytes();
      ++mask_count;
    }
  const NetworkShapes shapes = fused.shapes(8);
  for (std::size_t i = 0; i < fused.nodes().size(); ++i)
    if (fused.nodes()[i].layer->kind() == "batchnorm_relu") fused_values += shapes.node_outputs[i].numel();
  EXPECT_EQ(mask_count, 10u);
  EXPECT_EQ(masks * 8, fused_values) << "a bit a value";
  EXPECT_EQ(b.train.tensors.size() + 2 * 19 - mask_count, a.train.tensors.size())
      << "each fused ReLU's output and gradient are gone, each mask is new";
  CpuDevice device;
  Trainer trainer(device, fused, {.batch = 8, .memory = {.mode = OffloadMode::all}});
  const testing::Batch batch = testing::random_batch(8, 5, {.pixels = 3 * 32 * 32, .classes = 10});
  trainer.train_step(batch.images.data(), batch.labels.data());
  const IterationResult steady = trainer.train_step(batch.images.data(), batch.labels.data());
  EXPECT_EQ(steady.memory.peak_load_bytes, plan_memory(fused, 8, {.mode = OffloadMode::all}, kernels).train.peak_load_bytes);
}

}  // namespace
}  // namespace tidepool
