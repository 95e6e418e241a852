// Settings switched between iterations: the numbers stay those of an
// uninterrupted base run, and an impossible budget is refused without
// disturbing training.
#include <gtest/gtest.h>

#include <stdexcept>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/allocator.h"
#include "engine/plan/memory_plan.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;
using testing::train_on_cpu;

TEST(Replan, SwitchingSettingsBetweenIterationsKeepsTheNumbers) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 6}, 4).checksum;
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 8, .seed = 6, .room_to_grow = true});
  auto step = [&](int i) {
    const Batch b = random_batch(8, 50 + i);
    trainer.train_step(b.images.data(), b.labels.data());
  };
  step(0);
  trainer.apply({.mode = OffloadMode::all, .transfer = TransferMode::sync});
  step(1);
  const std::size_t minimum = trainer.memory().minimum_pool_bytes;
  EXPECT_THROW(trainer.apply({.mode = OffloadMode::all, .budget_bytes = minimum / 2}), MemoryRefusal);
  EXPECT_THROW(trainer.apply({.heuristic = "no-such-heuristic"}), std::invalid_argument);
  EXPECT_EQ(trainer.memory().settings.mode, OffloadMode::all) << "a refused change changes nothing";
  MemorySettings conv{.mode = OffloadMode::conv, .order = AllocOrder::derivative_first, .heuristic = allocator_names().back()};
  const std::size_t arena = trainer.memory().arena_bytes;
  CpuKernels k;
  conv.budget_bytes = (plan_memory(net, 8, conv, k).minimum_pool_bytes + arena) / 2;
  const std::size_t budget = conv.budget_bytes;
  trainer.apply(conv);
  EXPECT_EQ(trainer.memory().pool_bytes, budget);
  step(2);
  EXPECT_THROW(trainer.apply({.budget_bytes = arena + 4096}), MemoryRefusal) << "beyond the reserved arena";
  step(3);
  EXPECT_EQ(trainer.param_checksum(), base);
}

}  // namespace
}  // namespace tidepool
