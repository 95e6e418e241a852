// The Offload suite, continued: vDNN++'s asynchronous release in training.
// A block freed while its copy to the host may still run is parked, not
// reused; what the planner marks, what the pool decides, and that neither
// changes the numbers. (The parking itself, without timing:
// tests/engine/memory/parking_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/allocator.h"
#include "engine/memory/parking.h"
#include "engine/memory/pool_search.h"
#include "engine/plan/planner.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;
using testing::Recorder;
using testing::train_on_cpu;

// vDNN++'s async release: with room in the pool, offloaded blocks are
// parked and forward never reuses a block whose copy to the host may still
// run, so the compute stream never waits for an offload there; with sync
// transfers every layer waits for its copies. Over a link this slow the
// copies are still running.
TEST(Offload, AsyncForwardWaitsForNoCopyWhenThePoolHasRoom) {
  const Network net = testing::residual_net();
  auto forward_waits = [&](TransferMode transfer, bool roomy) {
    CpuDevice device({/*link_gbps=*/0.05});
    Recorder rec;
    TrainerOptions o{.batch = 16, .memory = {.mode = OffloadMode::all, .transfer = transfer}};
    if (roomy) {
      CpuKernels k;
      o.memory.budget_bytes = search_pool_size(plan_schedule(net, 16, {}, k), "best-fit").pool_bytes;  // base's pool: room for everything
    }
    Trainer trainer(device, net, o, &rec);
    EXPECT_EQ(trainer.memory().park_horizon() > 0, transfer == TransferMode::async);
    const Batch b = random_batch(16, 3);
    trainer.train_step(b.images.data(), b.labels.data());
    const auto& steps = trainer.train_schedule().steps;
    // Up to the last forward layer (the prefetches for backward come after).
    const auto forward_end = std::find_if(steps.rbegin(), steps.rend(),
                                          [](const Step& s) { return s.kind == StepKind::forward; }).base() -
                             steps.begin();
    int waits = 0;
    for (const SpanEvent& e : rec.spans)
      if (e.kind == SpanKind::wait && e.stream == Stream::compute && e.step < forward_end &&
          e.tensor != "data" && e.tensor != "labels") {
        ++waits;
      }
    return waits;
  };
  EXPECT_EQ(forward_waits(TransferMode::async, /*roomy=*/true), 0);
  EXPECT_GT(forward_waits(TransferMode::sync, /*roomy=*/true), 5);
}

// A tensor whose block is still parked when backward wants it back takes
// the block back with its bytes: no copy from the host, no wait. In a pool
// with room for every block nothing needs to come back over the link.
TEST(Offload, ParkedTensorsComeBackWithoutACopy) {
  const Network net = testing::residual_net();
  CpuKernels k;
  auto prefetches = [&](TransferMode transfer) {
    CpuDevice device;
    Recorder rec;
    TrainerOptions o{.batch = 8, .memory = {.mode = OffloadMode::all, .transfer = transfer, .budget_bytes = 2 * search_pool_size(plan_schedule(net, 8, {}, k), "best-fit").pool_bytes}, .seed = 4};
    Trainer trainer(device, net, o, &rec);
    const Batch b = random_batch(8, 3);
    trainer.train_step(b.images.data(), b.labels.data());
    int copies = 0, offloads = 0;
    for (const SpanEvent& e : rec.spans) {
      offloads += e.kind == SpanKind::offload;
      copies += e.kind == SpanKind::prefetch && e.tensor != "data" && e.tensor != "labels";
    }
    EXPECT_GT(offloads, 5) << "offloads still go out: the plan cannot know which blocks stay parked";
    return copies;
  };
  EXPECT_EQ(prefetches(TransferMode::async), 0);
  EXPECT_GT(prefetches(TransferMode::sync), 5);
}

// The planner marks only what async offloads leave behind as parkable;
// whether it parks is the trainer's to decide.
TEST(Offload, OnlyAsyncFreesOfOffloadedTensorsAreParked) {
  const Network net = testing::residual_net();
  for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
    CpuKernels k;
    const Schedule s = plan_schedule(net, 8, {.memory = {.mode = OffloadMode::all, .transfer = transfer}}, k);
    int parked = 0;
    for (const Step& st : s.steps)
      if (st.kind == StepKind::free && st.after_copy) {
        EXPECT_TRUE(s.tensors[st.tensor].offloaded) << s.tensors[st.tensor].info.name;
        ++parked;
      }
    if (transfer == TransferMode::sync)
      EXPECT_EQ(parked, 0);
    else
      EXPECT_GT(parked, 5);
  }
}

// Parking is decided per pool: the more room, the more blocks stay parked
// (every one, until needed, in a pool with room for everything); where the
// pool could park more, the trainer names a pool that does. Whatever is
// parked, the numbers are base's.
TEST(Offload, ParkingIsDecidedByThePoolAndNeverChangesTheNumbers) {
  const Network net = testing::residual_net();
  const std::uint64_t base = train_on_cpu(net, {.batch = 8, .seed = 4}, 2).checksum;
  CpuKernels k;
  std::set<int> horizons;
  for (const std::string& heuristic : allocator_names()) {
    // Twice the pool the heuristic needs without offloading (pytorch's is
    // its 2 MiB segments, many times best fit's).
    const std::size_t roomy = 2 * search_pool_size(plan_schedule(net, 8, {}, k), heuristic).pool_bytes;
    for (std::size_t budget : {std::size_t{0}, roomy}) {
      SCOPED_TRACE(heuristic + " budget " + std::to_string(budget));
      TrainerOptions o{.batch = 8, .memory = {.mode = OffloadMode::all, .heuristic = heuristic, .budget_bytes = budget}, .seed = 4};
      CpuDevice device;
      Trainer trainer(device, net, o);
      horizons.insert(trainer.memory().park_horizon());
      if (budget == roomy) EXPECT_EQ(trainer.memory().park_horizon(), kParkUntilNeeded);
      if (trainer.memory().park_horizon() == kParkUntilNeeded) EXPECT_EQ(trainer.memory().parking_pool_bytes, 0u);
      if (trainer.memory().parking_pool_bytes != 0) {
        EXPECT_GT(trainer.memory().parking_pool_bytes, trainer.memory().pool_bytes);
        TrainerOptions more = o;
        more.memory.budget_bytes = trainer.memory().parking_pool_bytes;
        CpuDevice other;
        EXPECT_GT(Trainer(other, net, more).memory().park_horizon(), trainer.memory().park_horizon())
            << "the named pool parks more";
      }
      EXPECT_EQ(train_on_cpu(net, o, 2).checksum, base);
    }
  }
  EXPECT_GT(horizons.size(), 1u) << "the least pools park less than a roomy one";
}

}  // namespace
}  // namespace tidepool
