// Where a run waits for offloads' copies (engine/memory/copy_waits.h), by
// copy engine: on the streams, at the placements that land on a block
// whose copy may still run; with copy threads, at each offloaded tensor's
// first free, where the host waits for its copy. (Against a simulated
// run's waits: tests/engine/plan/accudnn_schedule_test.cpp.)
#include "engine/memory/copy_waits.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/pool_search.h"
#include "engine/plan/planner.h"
#include "models/registry.h"

namespace tidepool {
namespace {

struct Waited {
  Schedule train;
  CopyWaits waits;
};

// resnet20 in mode all, in the least pool its heuristic needs, nothing parked.
Waited least_pool(CopyEngine engine) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  Waited w{plan_schedule(net, 32, {Phase::train, {.mode = OffloadMode::all, .copy_engine = engine}, {}}, cpu), {}};
  const std::size_t pool = search_pool_size(w.train, "best-fit").pool_bytes;
  w.waits = copy_waits(w.train, ScheduleTraces(w.train), "best-fit", pool, 0);
  return w;
}

TEST(CopyWaits, OnTheStreamsPlacementsWaitForTheCopiesStillReadingTheirBytes) {
  const Waited w = least_pool(CopyEngine::stream);
  int waits = 0;
  for (std::size_t i = 0; i < w.waits.at_step.size(); ++i)
    for (int t : w.waits.at_step[i]) {
      EXPECT_EQ(w.train.steps[i].kind, StepKind::alloc) << "step " << i;
      EXPECT_TRUE(w.train.tensors[static_cast<std::size_t>(t)].offloaded) << t;
      ++waits;
    }
  EXPECT_GT(waits, 0) << "in the least pool, forward reuses blocks whose copies were issued just before";
  EXPECT_EQ(waits, w.waits.waits());
}

TEST(CopyWaits, WithCopyThreadsTheHostWaitsAtEachOffloadedTensorsFirstFree) {
  const Waited w = least_pool(CopyEngine::threads);
  std::vector<int> first_free(w.train.tensors.size(), -1), waited_at(w.train.tensors.size(), -1);
  for (std::size_t i = 0; i < w.train.steps.size(); ++i) {
    const Step& st = w.train.steps[i];
    if (st.kind == StepKind::free && first_free[static_cast<std::size_t>(st.tensor)] < 0)
      first_free[static_cast<std::size_t>(st.tensor)] = static_cast<int>(i);
    for (int t : w.waits.at_step[i]) {
      EXPECT_EQ(waited_at[static_cast<std::size_t>(t)], -1) << "tensor " << t << " waited for twice";
      waited_at[static_cast<std::size_t>(t)] = static_cast<int>(i);
    }
  }
  int offloaded = 0;
  for (std::size_t t = 0; t < w.train.tensors.size(); ++t) {
    if (!w.train.tensors[t].offloaded) continue;
    ++offloaded;
    EXPECT_EQ(waited_at[t], first_free[t]) << w.train.tensors[t].info.name;
  }
  EXPECT_GT(offloaded, 0);
}

}  // namespace
}  // namespace tidepool
