// AccUDNN's tuner on the MemoryPlan: the batches that fit a budget, k*,
// its plan and its learning rate.
#include <gtest/gtest.h>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/batch_tuning.h"
#include "models/registry.h"

namespace tidepool {
namespace {

TEST(LargestBatch, FindsTheEdgeOfAMonotonePredicate) {
  int calls = 0;
  auto upto = [&](std::int64_t edge) {
    return [&, edge](std::int64_t k) {
      ++calls;
      return k <= edge;
    };
  };
  EXPECT_EQ(largest_batch(upto(1000), 1 << 16), 1000);
  EXPECT_LT(calls, 25) << "doubling then bisecting";
  EXPECT_EQ(largest_batch(upto(1), 100), 1);
  EXPECT_EQ(largest_batch(upto(0), 100), 0);
  EXPECT_EQ(largest_batch(upto(500), 64), 64) << "capped";
}

TEST(BatchTuning, TheBatchesFitTheBudgetAndKStarIsStallFree) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const PerfModel model(*specification_profile("m40"));
  const MemorySettings settings{.budget_bytes = std::size_t{64} << 20};
  const BatchTuning t = tune_batch(net, settings, cpu, model, {.base_lr = 0.1, .base_batch = 128});
  ASSERT_GT(t.largest_without_offload, 0);
  EXPECT_GT(t.largest_with_offload, t.largest_without_offload) << "offloading fits larger batches";
  // The edges are edges: one more does not fit.
  auto fits = [&](OffloadMode mode, std::int64_t k) {
    MemorySettings m = settings;
    m.mode = mode;
    try {
      plan_memory(net, k, m, cpu);
      return true;
    } catch (const MemoryRefusal&) {
      return false;
    }
  };
  EXPECT_TRUE(fits(OffloadMode::base, t.largest_without_offload));
  EXPECT_FALSE(fits(OffloadMode::base, t.largest_without_offload + 1));
  EXPECT_FALSE(fits(OffloadMode::all, t.largest_with_offload + 1));
  ASSERT_TRUE(t.best && t.plan);
  EXPECT_LE(*t.best, t.largest_with_offload);
  EXPECT_GE(*t.best, t.largest_without_offload) << "what fits without offload cannot stall";
  EXPECT_EQ(t.plan->batch, *t.best);
  EXPECT_EQ(t.plan->settings.mode, OffloadMode::accudnn);
  EXPECT_LE(t.plan->needed_pool_bytes, settings.budget_bytes);
  ASSERT_TRUE(t.plan->predicted);
  EXPECT_LE(t.plan->predicted->stall_us, 0.01 * t.plan->predicted->iteration_us);
  EXPECT_DOUBLE_EQ(t.lr, adapted_learning_rate(0.1, 128, *t.best, kAccudnnConvexity));
  ASSERT_FALSE(t.search.table.empty());
  EXPECT_EQ(t.search.table.front().batch, t.largest_with_offload) << "Algorithm 2 starts at k_max";
}

TEST(BatchTuning, NeedsABudgetAndRefusesOneTooSmallForBatchOne) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const PerfModel model(*specification_profile("m40"));
  EXPECT_THROW(tune_batch(net, {}, cpu, model), std::invalid_argument);
  EXPECT_THROW(tune_batch(net, {.budget_bytes = 1 << 20}, cpu, model), MemoryRefusal);
}

}  // namespace
}  // namespace tidepool
