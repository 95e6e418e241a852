// Mode hybrid (engine/plan/hybrid.h): keeps everything without a budget,
// fits every budget a fixed policy fits, is never predicted slower than
// the fastest of them there, mixes offloads and recomputes where that is
// faster, and trains base's bits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/fusion.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/gpu_queries.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/hybrid.h"
#include "engine/plan/memory_plan.h"
#include "engine/plan/planner.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

constexpr OffloadMode kFixed[] = {OffloadMode::all,      OffloadMode::conv,      OffloadMode::aconv,
                                  OffloadMode::autoswap, OffloadMode::accudnn,   OffloadMode::recompute,
                                  OffloadMode::recompute_cheap};

struct V100 {
  Profile profile = *specification_profile("v100");
  PerfModel model{profile};
  GpuQueries queries{profile.gpu};
};

int count(const Schedule& s, bool recomputed) {
  int n = 0;
  for (const PlannedTensor& t : s.tensors) n += recomputed ? t.recomputed : t.offloaded;
  return n;
}

TEST(Hybrid, WithoutABudgetKeepsEverythingAndWithoutAModelIsRefused) {
  const V100 gpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const MemoryPlan p = plan_memory(net, 32, {.mode = OffloadMode::hybrid}, gpu.queries, {}, &gpu.model);
  EXPECT_EQ(p.hybrid_from, "keep");
  EXPECT_EQ(count(p.train, true) + count(p.train, false), 0);
  const MemoryPlan base = plan_memory(net, 32, {}, gpu.queries, {}, &gpu.model);
  EXPECT_EQ(p.peak_load_bytes(), base.peak_load_bytes());
  EXPECT_THROW(plan_memory(net, 32, {.mode = OffloadMode::hybrid}, gpu.queries), std::invalid_argument);
}

// resnet50 at ImageNet shapes on a simulated V100, at 70 %, 50 % and 30 %
// of base's pool: hybrid fits, and no fixed policy that fits the same
// budget is predicted faster there; at 70 % the mix from the loose side is
// the fastest, at 30 % the one from the tight side, each faster than
// every fixed policy that fits.
TEST(Hybrid, FitsEachBudgetAndIsNeverPredictedSlowerThanAFixedPolicyThatFits) {
  const V100 gpu;
  const Network net = models::make_model("resnet50", models::InputKind::imagenet, 1000);
  const std::int64_t batch = 32;
  const std::size_t base = plan_memory(net, batch, {}, gpu.queries, {}, &gpu.model).pool_bytes;
  for (int percent : {70, 50, 30}) {
    const std::size_t budget = base / 100 * static_cast<std::size_t>(percent);
    const MemoryPlan h = plan_memory(net, batch, {.mode = OffloadMode::hybrid, .budget_bytes = budget}, gpu.queries,
                                     {}, &gpu.model);
    ASSERT_TRUE(h.predicted);
    EXPECT_LE(h.needed_pool_bytes, budget) << percent << " %";
    for (OffloadMode mode : kFixed) {
      const MemorySettings m{.mode = mode, .budget_bytes = budget};
      try {
        const MemoryPlan f = plan_memory(net, batch, m, gpu.queries, {}, &gpu.model);
        if (f.needed_pool_bytes > budget) continue;  // does not fit: not a rival
        EXPECT_LE(h.predicted->iteration_us, f.predicted->iteration_us) << percent << " %, " << to_string(mode);
      } catch (const MemoryRefusal&) {
      }
    }
    if (percent == 70 || percent == 30) {
      EXPECT_EQ(h.hybrid_from, percent == 70 ? "mix" : "tight mix");
      EXPECT_GT(count(h.train, true), 0) << "recomputes";
      EXPECT_GT(count(h.train, false), 0) << "offloads";
    }
  }
}

// Every fixed policy's choice, given to hybrid as its lists, plans the
// same steps: what hybrid weighs is what those modes run.
TEST(Hybrid, AFixedPolicysChoiceAsListsPlansTheSameSteps) {
  const V100 gpu;
  const Network net = fuse(models::make_model("resnet18", models::InputKind::cifar, 10), Fusion::relu);
  for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv, OffloadMode::aconv, OffloadMode::recompute,
                           OffloadMode::recompute_cheap}) {
    const PlanSettings train{.memory = {.mode = mode}};
    const Schedule fixed = plan_schedule(net, 16, train, gpu.queries);
    const Schedule lists = as_hybrid(net, 16, train, gpu.queries, fixed);
    EXPECT_EQ(lists.settings.memory.mode, OffloadMode::hybrid);
    ASSERT_EQ(lists.steps.size(), fixed.steps.size()) << to_string(mode);
    for (std::size_t i = 0; i < fixed.steps.size(); ++i) {
      const Step &a = fixed.steps[i], &b = lists.steps[i];
      ASSERT_TRUE(a.kind == b.kind && a.node == b.node && a.tensor == b.tensor && a.source == b.source &&
                  a.stream == b.stream && a.after_copy == b.after_copy && a.will_offload == b.will_offload)
          << to_string(mode) << " step " << i << ": " << to_string(a.kind) << " and " << to_string(b.kind);
    }
  }
}

// On the cpu device, planned by the V100's model with a link a thousand
// times slower, so that most offloads cost more than recomputes: offloads
// and recomputes mixed, and base's bits, in fp32 and bf16.
TEST(Hybrid, ParametersAreBase) {
  V100 gpu;
  gpu.profile.to_host.gbps /= 1000;
  gpu.profile.to_device.gbps /= 1000;
  gpu.model = PerfModel(gpu.profile);
  const Network net = fuse(testing::basic_block_net(), Fusion::relu);
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    auto train = [&](const MemorySettings& m, int* offloads, int* recomputes) {
      CpuDevice device;
      Trainer trainer(device, net, {.batch = 8, .memory = m, .seed = 4, .model = &gpu.model});
      for (unsigned i = 0; i < 3; ++i) {
        const testing::Batch b = testing::random_batch(8, 50 + i);
        trainer.train_step(b.images.data(), b.labels.data());
      }
      if (offloads) *offloads = count(trainer.train_schedule(), false);
      if (recomputes) *recomputes = count(trainer.train_schedule(), true);
      return trainer.read_parameters();
    };
    const std::vector<float> base = train({.precision = precision}, nullptr, nullptr);
    CpuDevice probe_device;
    const Trainer probe(probe_device, net, {.batch = 8, .memory = {.precision = precision}});
    const std::size_t pool = probe.memory().pool_bytes, persistent = probe.train_schedule().persistent_bytes;
    int offloads = 0, recomputes = 0, tried = 0, mixed = 0, offloading = 0, recomputing = 0;
    for (int percent : {90, 80, 75, 70, 60}) {
      const std::size_t budget = persistent + (pool - persistent) / 100 * static_cast<std::size_t>(percent);
      try {
        EXPECT_EQ(train({.precision = precision, .mode = OffloadMode::hybrid, .budget_bytes = budget}, &offloads,
                        &recomputes),
                  base)
            << to_string(precision) << " at " << percent << " %";
        ++tried;
        EXPECT_GT(offloads + recomputes, 0) << percent << " %";
        mixed += offloads > 0 && recomputes > 0;
        offloading += offloads > 0;
        recomputing += recomputes > 0;
      } catch (const MemoryRefusal&) {
      }
    }
    EXPECT_GT(tried, 0);
    EXPECT_GT(offloading, 0) << to_string(precision);
    EXPECT_GT(recomputing, 0) << to_string(precision);
    if (precision == Precision::fp32) EXPECT_GT(mixed, 0) << "no budget mixed offloads and recomputes";
  }
}

}  // namespace
}  // namespace tidepool
