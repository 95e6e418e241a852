// --precision bf16 end to end on the cpu device: activations and their
// gradients are stored in 16 bits (the plan says so and halves their
// bytes), the parameters stay bit-identical across offload modes,
// heuristics, transfers and compression within the precision, each layer's
// gradient follows fp32's within bf16's rounding, and fp16 is refused until
// it has loss scaling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/planner.h"
#include "engine/run/layer_args.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::quadrant_batch;

std::uint64_t trained_checksum(const Network& net, MemorySettings m) {
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .memory = m, .seed = 7});
  for (unsigned i = 0; i < 3; ++i) {
    const Batch b = quadrant_batch(8, 10 + i);
    trainer.train_step(b.images.data(), b.labels.data());
  }
  return trainer.param_checksum();
}

TEST(Precision, Bf16ParametersAreBitIdenticalInEveryModeHeuristicAndTransfer) {
  const Network net = testing::residual_net();
  const MemorySettings bf16{.precision = Precision::bf16};
  const std::uint64_t base = trained_checksum(net, bf16);
  EXPECT_NE(base, trained_checksum(net, {}))
      << "bf16 rounds every activation: its parameters cannot be fp32's";
  for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv, OffloadMode::aconv})
    for (TransferMode transfer : {TransferMode::sync, TransferMode::async})
      for (const char* heuristic : {"best-fit", "first-fit", "cnmem"}) {
        MemorySettings m = bf16;
        m.mode = mode;
        m.transfer = transfer;
        m.heuristic = heuristic;
        EXPECT_EQ(trained_checksum(net, m), base)
            << to_string(mode) << ", " << to_string(transfer) << ", " << heuristic;
      }
  MemorySettings compressed = bf16;
  compressed.mode = OffloadMode::all;
  compressed.compress = true;
  EXPECT_EQ(trained_checksum(net, compressed), base) << "16-bit values zero-value compressed in pairs";
}

// The layers' outputs it offloads halve; the images stay f32 (the loader's)
// and so do the few bytes layers save for backward (max-pool indices).
TEST(Precision, PlanStoresActivationsAndTheirGradientsIn16BitsAndHalvesWhatIsOffloaded) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  auto offloaded_bytes = [&](Precision p) {
    const Schedule s =
        plan_schedule(net, 8, {.memory = {.precision = p, .mode = OffloadMode::all}}, kernels);
    std::size_t bytes = 0;
    for (const NodeTensors& nt : s.nodes)
      if (s.tensors[nt.output].offloaded) bytes += s.tensors[nt.output].info.bytes();
    for (const PlannedTensor& t : s.tensors) {
      const TensorInfo& i = t.info;
      if (i.role == Role::weight || i.role == Role::weight_gradient || i.role == Role::optimizer_state)
        EXPECT_EQ(i.dtype, DType::f32) << i.name << ": the master copy stays f32";
      if (p == Precision::bf16 && i.role == Role::activation_gradient) EXPECT_EQ(i.dtype, DType::bf16) << i.name;
    }
    EXPECT_EQ(s.tensors[s.loss].info.dtype, DType::f32) << "the host reads the loss as f32";
    EXPECT_EQ(s.tensors[s.data].info.dtype, DType::f32) << "the loader's images";
    return bytes;
  };
  const std::size_t fp32 = offloaded_bytes(Precision::fp32);
  ASSERT_GT(fp32, 0u);
  EXPECT_EQ(offloaded_bytes(Precision::bf16) * 2, fp32);
}

// Each step's f32 copies sit at the front of its workspace, inside it, and
// never overlap.
TEST(Precision, F32CopiesFitTheirStepsWorkspace) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  const Schedule s = plan_schedule(net, 8, {.memory = {.precision = Precision::bf16}}, kernels);
  int copies = 0;
  for (const Step& st : s.steps) {
    if (st.kind != StepKind::forward && st.kind != StepKind::backward) continue;
    const bool forward = st.kind == StepKind::forward;
    const NodeTensors& nt = s.nodes[st.node];
    const int ws = forward ? nt.forward_workspace : nt.backward_workspace;
    ASSERT_GE(ws, 0) << "every 16-bit step has its copies in a workspace";
    const std::size_t size = s.tensors[ws].info.bytes();
    // Addresses: tensor t at (t + 1) << 32, so each is far from the others.
    const LayerCall call = layer_call(s, *net.nodes()[st.node].layer, st.node, forward, [](int t) -> std::byte* {
      return t < 0 ? nullptr : reinterpret_cast<std::byte*>((static_cast<std::uintptr_t>(t) + 1) << 32);
    });
    const auto* base = reinterpret_cast<const std::byte*>((static_cast<std::uintptr_t>(ws) + 1) << 32);
    std::set<std::pair<const std::byte*, const std::byte*>> spans;
    for (const F32Copy& c : call.copies) {
      ++copies;
      EXPECT_EQ(c.type, DType::bf16);
      EXPECT_NE(c.widen, c.round);
      const std::byte* end = c.copy + c.count * 4;
      EXPECT_GE(c.copy, base);
      EXPECT_LE(end, static_cast<const std::byte*>(call.args.workspace));
      for (auto [b, e] : spans) EXPECT_TRUE(end <= b || c.copy >= e) << "copies overlap";
      spans.insert({c.copy, end});
    }
    EXPECT_LE(static_cast<const std::byte*>(call.args.workspace), base + size);
  }
  EXPECT_GT(copies, 0);
}

// With lr = 1 and no momentum or decay one step subtracts the gradient: in
// bf16 each parameter's gradient is fp32's up to the rounding of the
// activations and gradients it is made from (2^-9 relative each, compounded
// through the layers and summed over the batch with cancellation). The
// stated tolerance: 5 % relative (L2) per parameter tensor; measured on this
// network, 0.1 % (fc) to 3.0 % (conv1, the farthest from the loss). A wrong
// gradient is off by its own size.
TEST(Precision, Bf16GradientsFollowFp32LayerByLayer) {
  const Network net = testing::residual_net(true, false);
  auto gradients = [&](Precision p) {
    CpuDevice device;
    Trainer trainer(device, net,
                    {.batch = 8, .memory = {.precision = p}, .seed = 5, .sgd = {.lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f}});
    const Batch b = quadrant_batch(8, 42);
    const std::vector<float> w0 = trainer.read_parameters();
    trainer.train_step(b.images.data(), b.labels.data());
    const std::vector<float> w1 = trainer.read_parameters();
    std::vector<double> g(w0.size());
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<double>(w0[i]) - w1[i];
    return g;
  };
  const std::vector<double> exact = gradients(Precision::fp32);
  const std::vector<double> bf16 = gradients(Precision::bf16);
  ASSERT_EQ(exact.size(), bf16.size());
  // read_parameters lists every parameter in node order, batchnorm's
  // running statistics among them: walk the specs to find each one.
  std::size_t at = 0;
  const NetworkShapes shapes = net.shapes(8);
  for (std::size_t i = 0; i < net.nodes().size(); ++i)
    for (const ParamSpec& spec : net.nodes()[i].layer->params(shapes.node_inputs[i])) {
      const auto n = static_cast<std::size_t>(spec.shape.numel());
      if (spec.trainable) {
        double diff = 0, norm = 0;
        for (std::size_t k = at; k < at + n; ++k) {
          diff += (bf16[k] - exact[k]) * (bf16[k] - exact[k]);
          norm += exact[k] * exact[k];
        }
        EXPECT_LT(std::sqrt(diff), 0.05 * std::sqrt(norm) + 1e-6)
            << net.nodes()[i].layer->name() << "." << spec.suffix << ": relative error "
            << std::sqrt(diff / std::max(norm, 1e-30));
      }
      at += n;
    }
  EXPECT_EQ(at, exact.size());
}

TEST(Precision, Fp16TrainingIsRefusedUntilItHasLossScaling) {
  const Network net = testing::residual_net();
  CpuDevice device;
  try {
    Trainer trainer(device, net, {.batch = 8, .memory = {.precision = Precision::fp16}});
    FAIL() << "fp16 trained without loss scaling";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("loss scaling"), std::string::npos) << e.what();
  }
  Trainer trainer(device, net, {.batch = 8});
  EXPECT_THROW(trainer.apply({.precision = Precision::fp16}), std::invalid_argument);
  EXPECT_EQ(trainer.memory().settings.precision, Precision::fp32) << "a refused change leaves the run as it was";
}

}  // namespace
}  // namespace tidepool
