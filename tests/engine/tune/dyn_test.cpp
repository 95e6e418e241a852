// vDNN's `dyn` policy (engine/tune/dyn_mode.h): base when it fits, without
// profiling; under a budget it times the modes that fit and keeps the
// fastest, leaving the parameters as they were.
#include <gtest/gtest.h>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/allocator.h"
#include "engine/memory/pool_search.h"
#include "engine/plan/planner.h"
#include "engine/tune/dyn_mode.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;
using testing::train_on_cpu;

TEST(Dyn, KeepsEverythingWhenBaseFitsAndProfilesOtherwise) {
  const Network net = testing::residual_net();
  const Batch b = random_batch(8, 9);
  {
    CpuDevice device;
    Trainer trainer(device, net, {.batch = 8, .seed = 5});
    const DynChoice c = choose_dyn(trainer, b.images.data(), b.labels.data());
    EXPECT_EQ(c.mode, OffloadMode::base) << "no budget: base fits and transfers nothing";
    for (const auto& p : c.profiles) EXPECT_EQ(p.seconds, 0.0) << "no profiling was needed";
  }
  // A budget between all's minimum and base's: base is refused, the rest are timed.
  CpuKernels k;
  const std::size_t base_min = search_pool_size(plan_schedule(net, 8, {}, k), "best-fit").pool_bytes;
  const std::size_t all_min =
      search_pool_size(plan_schedule(net, 8, {.memory = {.mode = OffloadMode::all}}, k), "best-fit").pool_bytes;
  ASSERT_LT(all_min, base_min);
  CpuDevice device;
  const std::size_t budget = (all_min + base_min) / 2 / kAllocGranularity * kAllocGranularity;
  Trainer trainer(device, net, {.batch = 8, .memory = {.mode = OffloadMode::all, .budget_bytes = budget}, .seed = 5});
  const std::uint64_t before = trainer.param_checksum();
  const DynChoice c = choose_dyn(trainer, b.images.data(), b.labels.data());
  EXPECT_NE(c.mode, OffloadMode::base);
  EXPECT_EQ(trainer.memory().settings.mode, c.mode);
  EXPECT_FALSE(c.profiles.front().fits) << "base needs more than the budget";
  int fitting = 0;
  for (const auto& p : c.profiles) fitting += p.fits;
  for (const auto& p : c.profiles)
    if (p.fits && fitting > 1) EXPECT_GT(p.seconds, 0.0) << to_string(p.mode) << " was not timed";
  EXPECT_EQ(trainer.param_checksum(), before) << "profiling leaves the parameters as they were";
  EXPECT_EQ(trainer.iteration(), 0);
  // And training from here gives base's numbers.
  for (int i = 0; i < 3; ++i) {
    const Batch s = random_batch(8, 50 + i);
    trainer.train_step(s.images.data(), s.labels.data());
  }
  EXPECT_EQ(trainer.param_checksum(), train_on_cpu(net, {.batch = 8, .seed = 5}, 3).checksum);
}

}  // namespace
}  // namespace tidepool
