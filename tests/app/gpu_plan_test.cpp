// A GPU's plan comes from that GPU's answers (engine/device/kernel_queries.h):
// the same on every host, vDNN's m/p trade-off in it, bf16 refused where
// the GPU has none, and a profile measured on the GPU placing what the GPU
// answered.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/device_factory.h"
#include "app/commands/profile_command.h"
#include "engine/device/gpu_queries.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_plan.h"
#include "models/registry.h"
#include "testing/run_command.h"

namespace tidepool::app {
namespace {

testing::CommandResult tidepool(const std::string& env, const std::string& args) {
  return testing::run_command(env + " " + std::string(TIDEPOOL_BINARY) + " " + args);
}

// oneDNN reads its ISA cap when it starts, so each cap is a process of its
// own. SSE4.1 and AVX2 block channels alike but pick other kernels and
// workspaces; an AVX-512 machine (16-channel blocks) is covered by the same
// argument: no answer for the GPU comes from oneDNN.
TEST(GpuPlan, IsTheSameWhateverTheHostsInstructionSet) {
  const std::string args = "plan --model vgg16 --dataset imagenet --batch-size 64 --heuristic best-fit --profile v100 --json";
  const testing::CommandResult avx2 = tidepool("ONEDNN_MAX_CPU_ISA=AVX2", args);
  ASSERT_EQ(avx2.status, 0) << avx2.output;
  const testing::CommandResult sse = tidepool("ONEDNN_MAX_CPU_ISA=SSE41", args);
  ASSERT_EQ(sse.status, 0) << sse.output;
  EXPECT_EQ(avx2.output, sse.output);
  const testing::CommandResult all = tidepool("ONEDNN_MAX_CPU_ISA=ALL", args);
  ASSERT_EQ(all.status, 0) << all.output;
  EXPECT_EQ(avx2.output, all.output);

  // vDNN's trade: p's rows need the workspaces the profile's answers give,
  // m's none, and nothing else differs between them.
  const nlohmann::json rows = nlohmann::json::parse(avx2.output);
  int pairs = 0;
  for (const nlohmann::json& p : rows) {
    if (p["algo"] != "p" || p["mode"] != "base") continue;
    for (const nlohmann::json& m : rows) {
      if (m["algo"] != "m" || m["mode"] != p["mode"] || m["order"] != p["order"]) continue;
      ++pairs;
      EXPECT_GT(p["pool_bytes"].get<std::size_t>(), m["pool_bytes"].get<std::size_t>() + (std::size_t{100} << 20))
          << "base's p pool holds the largest Winograd workspace (hundreds of MiB at batch 64)";
    }
  }
  EXPECT_EQ(pairs, 2) << "base's two allocation orders";
}

TEST(GpuPlan, PlanSaysWhichDeviceItPlansFor) {
  const testing::CommandResult gpu =
      tidepool("", "plan --model resnet20 --dataset cifar10 --batch-size 8 --heuristic best-fit --profile v100");
  ASSERT_EQ(gpu.status, 0) << gpu.output;
  EXPECT_NE(gpu.output.find("planned for NVIDIA Tesla V100"), std::string::npos) << gpu.output;
  const testing::CommandResult cpu =
      tidepool("", "plan --model resnet20 --dataset cifar10 --batch-size 8 --heuristic best-fit");
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  EXPECT_NE(cpu.output.find("planned for this machine's cpu device"), std::string::npos) << cpu.output;
}

TEST(GpuPlan, AGpuWithoutBf16RefusesIt) {
  const testing::CommandResult v100 = tidepool(
      "", "plan --model resnet20 --dataset cifar10 --batch-size 8 --heuristic best-fit --profile v100 --precision bf16");
  EXPECT_NE(v100.status, 0);
  EXPECT_NE(v100.output.find("has no bf16 arithmetic"), std::string::npos) << v100.output;
  const testing::CommandResult a100 = tidepool(
      "", "plan --model resnet20 --dataset cifar10 --batch-size 8 --heuristic best-fit --profile a100 --precision bf16");
  EXPECT_EQ(a100.status, 0) << a100.output;
}

// A GPU whose cuDNN picked other workspaces than the model says.
class MeasuredGpu final : public KernelQueries {
 public:
  bool takes_16bit(DType type) const override { return type == DType::f16; }
  std::size_t conv_workspace_bytes(const ConvShape& s, ConvScheme scheme, ConvPass pass) const override {
    const std::size_t own = scheme == ConvScheme::p ? 4096 * static_cast<std::size_t>(s.c + s.n) + 64 * static_cast<int>(pass) : 256;
    return conv_weights_copy_bytes(s) + own;
  }
  std::size_t batchnorm_relu_mask_bytes(const BatchNormShape& s) const override { return gpu_relu_mask_bytes(s); }
  std::size_t pool_saved_bytes(const PoolShape& s) const override { return gpu_pool_saved_bytes(s); }
};

TEST(GpuPlan, AMeasuredProfilePlacesWhatTheGpuAnswered) {
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const MeasuredGpu gpu;
  const std::vector<MeasuredWorkspace> recorded = record_workspaces(net, {8, 16}, gpu);
  EXPECT_FALSE(recorded.empty());
  const GpuQueries from_profile(GpuKernelFacts{"measured", true, false, recorded});
  auto pool = [&](const KernelQueries& q, std::int64_t batch, ConvScheme scheme, Precision precision) {
    return plan_memory(net, batch, {.scheme = scheme, .precision = precision, .heuristic = "best-fit"}, q)
        .summary()
        .pool_bytes;
  };
  for (std::int64_t batch : {8, 16})
    for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p})
      for (Precision precision : {Precision::fp32, Precision::fp16})
        EXPECT_EQ(pool(from_profile, batch, scheme, precision), pool(gpu, batch, scheme, precision))
            << "batch " << batch << " " << to_string(scheme) << " " << to_string(precision);
  EXPECT_NE(pool(from_profile, 32, ConvScheme::p, Precision::fp32), pool(gpu, 32, ConvScheme::p, Precision::fp32))
      << "a batch the profile did not measure: the model's workspaces";

  // And they survive the profile's file.
  Profile p = *specification_profile("v100");
  p.gpu.workspaces = recorded;
  EXPECT_EQ(profile_from_json(to_json(p)), p);
}

}  // namespace
}  // namespace tidepool::app
