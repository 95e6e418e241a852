// Plans for a device whose kernels take 16-bit activations themselves
// (KernelQueries::takes_16bit, the cuda device): the steps of the layers
// that have such kernels (Layer::has_16bit_kernels) pass their 16-bit
// tensors as they are, with no f32 copies, and the rest keep their copies.
// Planned here with a GPU's answers (GpuQueries: the cuda device's rule for
// a 16-bit convolution's workspace, cuDNN's plus a 16-bit copy of the
// weights), the same on every machine; the cuda kernels themselves are
// tested by the gpu suite (tests/engine/device/cuda/sixteen_bit_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/bytes_text.h"
#include "engine/layers/conv2d.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/device/gpu_queries.h"
#include "engine/step_calls/f32_views.h"
#include "engine/plan/memory_plan.h"
#include "engine/plan/planner.h"
#include "engine/step_calls/layer_args.h"
#include "models/registry.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

// A GPU's answers (GpuQueries: the same on every host) that take the
// 16-bit types they are given natively (the cuda device: both on Ampere
// and later, f16 alone before) and train the others on f32 copies.
class SixteenBitQueries final : public KernelQueries {
 public:
  explicit SixteenBitQueries(std::vector<DType> takes = {DType::bf16, DType::f16})
      : gpu_(GpuKernelFacts{"a test GPU", true, true, {}}), takes_(std::move(takes)) {}
  bool takes_16bit(DType type) const override {
    return std::find(takes_.begin(), takes_.end(), type) != takes_.end();
  }
  std::size_t conv_workspace_bytes(const ConvShape& s, ConvScheme scheme, ConvPass pass) const override {
    return gpu_.conv_workspace_bytes(s, scheme, pass);
  }
  std::size_t batchnorm_relu_mask_bytes(const BatchNormShape& s) const override {
    return gpu_.batchnorm_relu_mask_bytes(s);
  }
  std::size_t pool_saved_bytes(const PoolShape& s) const override { return gpu_.pool_saved_bytes(s); }

 private:
  GpuQueries gpu_;
  std::vector<DType> takes_;
};

bool kernel_takes_16bit(std::string_view kind) {
  return kind == "conv2d" || kind == "depthwise_conv" || kind == "batchnorm" || kind == "relu" || kind == "add" ||
         kind == "maxpool" || kind == "avgpool" || kind == "global_avgpool";
}

// Tensor t at (t + 1) << 32: every address names its tensor.
std::byte* address_of(int t) {
  return t < 0 ? nullptr : reinterpret_cast<std::byte*>((static_cast<std::uintptr_t>(t) + 1) << 32);
}

TEST(SixteenBitKernels, TheirStepsPassTheir16BitTensorsAsTheyAre) {
  const Network net = testing::residual_net();
  SixteenBitQueries kernels;
  const Schedule s = plan_schedule(net, 8, {.memory = {.precision = Precision::bf16}}, kernels);
  int native = 0, copied = 0;
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    const NodeTensors& nt = s.nodes[i];
    const Layer& layer = *net.nodes()[i].layer;
    bool all_16bit = is_16bit(s.tensors[nt.output].info.dtype);
    for (int t : nt.inputs) all_16bit = all_16bit && is_16bit(s.tensors[t].info.dtype);
    EXPECT_EQ(nt.computes_16bit, kernel_takes_16bit(layer.kind()) && all_16bit) << layer.name();
    for (bool forward : {true, false}) {
      if (!forward && !nt.runs_backward) continue;
      const LayerCall call = layer_call(s, layer, static_cast<int>(i), forward, address_of);
      if (!nt.computes_16bit) {
        EXPECT_EQ(call.args.dtype, DType::f32) << layer.name();
        copied += call.copies.empty() ? 0 : 1;
        continue;
      }
      ++native;
      EXPECT_TRUE(call.copies.empty()) << layer.name();
      EXPECT_EQ(f32_views(s, layer, static_cast<int>(i), forward).bytes, 0u) << layer.name();
      EXPECT_EQ(call.args.dtype, DType::bf16) << layer.name();
      EXPECT_EQ(call.args.inputs[0], address_of(nt.inputs[0])) << layer.name();
      EXPECT_EQ(call.args.output, address_of(nt.output)) << layer.name();
      if (!forward) {
        EXPECT_EQ(call.args.output_grad, address_of(nt.output_grad)) << layer.name();
        if (nt.input_grads[0] >= 0) EXPECT_EQ(call.args.input_grads[0], address_of(nt.input_grads[0]));
      }
    }
  }
  EXPECT_GT(native, 0);
  EXPECT_GT(copied, 0) << "the first convolution (f32 images), flatten, the classifier and the loss keep their copies";
  EXPECT_FALSE(s.nodes[0].computes_16bit) << "the first convolution reads the f32 images";

  // The cpu table in bf16: every step copied where oneDNN has no bf16
  // kernels of its own (no AVX-512 BF16, or ONEDNN_MAX_CPU_ISA caps it), the same
  // steps as this table's computing in bf16 where it has.
  const std::unique_ptr<KernelQueries> cpu = make_cpu_queries();
  const Schedule cpu_bf16 = plan_schedule(net, 8, {.memory = {.precision = Precision::bf16}}, *cpu);
  for (std::size_t i = 0; i < cpu_bf16.nodes.size(); ++i)
    EXPECT_EQ(cpu_bf16.nodes[i].computes_16bit, cpu->takes_16bit(DType::bf16) && s.nodes[i].computes_16bit)
        << net.nodes()[i].layer->name();
}

// A table that takes f16 and not bf16, but does not refuse bf16 (as the
// cuda device before Ampere does), plans bf16 steps on f32 copies.
TEST(SixteenBitKernels, ATypeTheTableDoesNotTakeGetsCopies) {
  const Network net = testing::residual_net();
  SixteenBitQueries kernels({DType::f16});
  auto native_steps = [&](Precision p) {
    int n = 0;
    for (const NodeTensors& nt : plan_schedule(net, 8, {.memory = {.precision = p}}, kernels).nodes)
      n += nt.computes_16bit ? 1 : 0;
    return n;
  };
  EXPECT_EQ(native_steps(Precision::bf16), 0);
  EXPECT_GT(native_steps(Precision::fp16), 0);
}

// A 16-bit convolution's workspace holds what the table says (here the
// copy of its weights), and no f32 copies.
TEST(SixteenBitKernels, AConvolutionsWorkspaceIsItsKernelsAlone) {
  const Network net = testing::residual_net();
  SixteenBitQueries kernels;
  const PlanSettings settings{.memory = {.precision = Precision::bf16}};
  const Schedule s = plan_schedule(net, 8, settings, kernels);
  int checked = 0;
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    const NodeTensors& nt = s.nodes[i];
    const Layer& layer = *net.nodes()[i].layer;
    if (!nt.computes_16bit || layer.kind() != "conv2d") continue;
    std::vector<Shape> in;
    for (int t : nt.inputs) in.push_back(s.tensors[t].info.shape);
    const std::size_t fwd =
        layer.workspace_bytes(in, Pass::forward, settings.memory.scheme, s.channel_block, DType::bf16, kernels);
    ASSERT_GE(nt.forward_workspace, 0) << layer.name() << ": the weights' 16-bit copy";
    EXPECT_EQ(s.tensors[nt.forward_workspace].info.bytes(), (fwd + 3) / 4 * 4) << layer.name() << " (in words)";
    const ConvShape shape = static_cast<const Conv2d&>(layer).conv_shape(in[0], s.channel_block, DType::bf16);
    EXPECT_GE(fwd, conv_weights_copy_bytes(shape)) << layer.name() << ": the weights' copy is in it";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// What the copies cost: under mode all the peak is one layer's step, and a
// step that computes on its 16-bit tensors needs none of their f32 copies,
// so 16 bits lower the peak as they lower what is offloaded. Both tables
// answer as one GPU does (the same figures on every host); `cpu` takes no
// 16-bit type, as the cpu device without AVX-512 BF16.
TEST(SixteenBitKernels, LowerThePeakUnderAllWhereF32CopiesRaiseIt) {
  for (const char* model : {"resnet18", "vgg16"}) {
    const Network net = models::make_model(model, models::InputKind::cifar, 10);
    SixteenBitQueries cpu(std::vector<DType>{});
    SixteenBitQueries sixteen;
    auto peak = [&](const KernelQueries& k, Precision p) {
      return plan_memory(net, 128, {.precision = p, .mode = OffloadMode::all}, k, {}).figures.peak_load_bytes;
    };
    const std::size_t fp32 = peak(cpu, Precision::fp32);
    EXPECT_EQ(peak(sixteen, Precision::fp32), fp32) << model << ": fp32 plans alike on both tables";
    const std::size_t copies = peak(cpu, Precision::bf16);
    const std::size_t native = peak(sixteen, Precision::bf16);
    EXPECT_GT(copies, fp32) << model << ": the f32 copies cost more than the 16-bit tensors save";
    EXPECT_LT(native, fp32) << model << ": with 16-bit kernels the peak falls";
    EXPECT_EQ(peak(sixteen, Precision::fp16), native) << model << ": fp16 takes bf16's bytes";
    // The figures the README quotes (CIFAR shapes, batch 128).
    std::printf("%s batch 128, mode all, peak load: fp32 %s, bf16 on f32 copies %s, bf16 on 16-bit kernels %s\n",
                model, format_bytes(fp32).c_str(), format_bytes(copies).c_str(), format_bytes(native).c_str());
  }
}

}  // namespace
}  // namespace tidepool
