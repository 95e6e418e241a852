// Replays a schedule through an allocator without computing anything: the
// address map, memory load and footprint a real run of the same schedule
// with the same policy will have.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/allocator.h"
#include "engine/schedule.h"

namespace tidepool {

struct DryRun {
  bool fits = true;
  int failed_step = -1;  // the first alloc the pool could not place (-1: none)
  PoolStats stats;       // after the replay (peak figures cover it all)
  std::vector<std::size_t> offset;  // per tensor, where it was last placed
};

// Places the persistent tensors first when `with_persistent` (a fresh
// allocator); leave it false to replay one more iteration on an allocator
// that already holds them.
DryRun dry_run(const Schedule& schedule, Allocator& allocator, bool with_persistent = true);

// A pool size that serves the schedule under the named policy: the footprint
// of a replay in an unbounded pool.
std::size_t footprint_of(const Schedule& schedule, std::string_view heuristic);

}  // namespace tidepool
