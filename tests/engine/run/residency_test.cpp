// Where the executor keeps each tensor, read from its placement mid-schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/planner.h"
#include "engine/run/executor.h"
#include "testing/batches.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::random_batch;

// Stopping a schedule at the end of the forward pass shows where every
// tensor lives: offloaded ones on the host, kept ones on the device.
TEST(Residency, ForwardPassLeavesOffloadedTensorsOnTheHost) {
  const Network net = testing::residual_net();
  CpuKernels k;
  for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
    Schedule s = plan_schedule(net, 4, {.memory = {.mode = OffloadMode::all, .transfer = transfer}}, k);
    // The end of forward: the last forward step and the frees and offloads
    // that follow it, before backward starts bringing tensors back.
    auto end = std::find_if(s.steps.rbegin(), s.steps.rend(),
                            [](const Step& st) { return st.kind == StepKind::forward; }).base();
    while (end != s.steps.end() && (end->kind == StepKind::free || end->kind == StepKind::offload ||
                                    end->kind == StepKind::wait_offload))
      ++end;
    s.steps.erase(end, s.steps.end());

    CpuDevice device;
    std::byte* arena = device.reserve_arena(8 << 20);
    std::byte* pinned = device.reserve_pinned((8 << 20) + 64);
    Executor executor(device, net, arena, {pinned + 64, std::size_t{8} << 20}, {pinned, 64}, nullptr);
    executor.use_pool("best-fit", 8 << 20, s);
    const Batch b = random_batch(4, 1);
    executor.run(s, {.images = b.images.data(), .labels = b.labels.data()});
    const Placement& p = executor.placement();
    int on_host = 0;
    for (int t = 0; t < static_cast<int>(s.tensors.size()); ++t) {
      const PlannedTensor& pt = s.tensors[t];
      if (pt.offloaded) {
        EXPECT_EQ(p.residency[t], Residency::host) << pt.info.name;
        EXPECT_FALSE(p.placed[t]) << pt.info.name << " still holds device memory";
        ++on_host;
      } else if (p.placed[t]) {
        EXPECT_EQ(p.residency[t], Residency::device) << pt.info.name;
      }
    }
    EXPECT_GT(on_host, 5);
  }
}

}  // namespace
}  // namespace tidepool
