// Where a run in a pool waits for offloads' copies: the steps whose
// placement takes bytes that an offloaded tensor's copy to the host may
// still be reading (its block freed, or parked and given back, while the
// copy runs; with copy threads, the frees themselves, where the host
// waits for the copy), and the tensors whose copies they wait for; and the
// offloaded tensors that come back without a copy, their blocks still
// parked (engine/memory/parking.h). The executor's
// pool makes the compute stream wait there (engine/memory/device_pool.h);
// the performance model counts those waits (engine/plan/accudnn_schedule.h).
// Which placements land on such bytes depends on the pool's size, its
// heuristic and how many blocks stay parked, so it is found the one way
// placement is known: by replaying the schedule in that pool
// (engine/memory/replay.h), the steady iteration watched with the same
// fences (engine/memory/copy_fences.h) the executor's pool keeps.
//
//   CopyWaits w = copy_waits(schedule, ScheduleTraces(schedule), "best-fit", pool_bytes, park_horizon);
//   for (int t : w.at_step[i]) ...  // step i's block waits for tensor t's offload
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "engine/memory/replay.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

struct CopyWaits {
  std::vector<std::vector<int>> at_step;  // per step of the schedule: the offloaded tensors waited for
  // Per tensor: placed again (for backward) while its block was still
  // parked, so it took the block back as it was and nothing is copied back.
  std::vector<bool> reclaimed;
  int waits() const;                      // how many there are in all
};
// `traces`: the schedule's (engine/memory/replay.h); `park_horizon`: as
// Schedule::park_horizon. None where the schedule does not run in the pool.
CopyWaits copy_waits(const Schedule& schedule, const ScheduleTraces& traces, std::string_view heuristic,
                     std::size_t pool_bytes, int park_horizon);

}  // namespace tidepool
