// Replays a schedule through an allocator without computing anything: the
// address map, memory load and footprint a real run of the same schedule
// with the same policy will have (placement does not depend on timing; see
// the executor's fences).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/plan/schedule.h"

namespace tidepool {

struct DryRun {
  bool fits = true;
  int failed_step = -1;  // the first alloc the pool could not place (-1: none)
  PoolStats stats;       // the allocator after the replay
  // Of this replay alone:
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;            // the highest extent reached
  std::size_t largest_free_at_peak_bytes = 0;  // inside the footprint, when the load peaked
  std::vector<std::size_t> offset;            // per tensor, where it was last placed
};

// Places the persistent tensors first when `with_persistent` (a fresh
// allocator); leave it false to replay one more iteration on an allocator
// that already holds them.
DryRun dry_run(const Schedule& schedule, Allocator& allocator, bool with_persistent = true);

// What a policy does with a schedule, run after run: the first iteration
// and the steady state (a second iteration on the same allocator, which is
// what a policy that learns, like smartpool, settles into).
struct Replay {
  std::size_t pool = 0;  // vDNN++'s pool-size search: a pool that serves both iterations
  DryRun first, steady;  // replays in that pool
  std::size_t pool_bytes() const { return pool; }
};
Replay replay_twice(const Schedule& schedule, std::string_view heuristic);
// The same two iterations in a given pool (fresh allocator); `fits` of
// either replay says whether the pool served it.
Replay replay_in(const Schedule& schedule, std::string_view heuristic, std::size_t pool_bytes);

// The park horizons a run tries, most parking first: the more blocks stay
// parked, the fewer forward layers wait for copies and the more tensors
// come back without one.
inline constexpr int kParkHorizons[] = {kParkUntilNeeded, 4, 2, 1};

// Async transfers: sets the schedule's park_horizon to the first of
// kParkHorizons with which it runs in `pool_bytes` under the heuristic, run
// after run (replay_in), or to 0 when none does or there is nothing to
// park. Returns that replay when it parks. Parking holds memory at the peak
// and can fragment a tight pool that serves the unparked schedule, which is
// why this is decided per pool.
std::optional<Replay> park_if_it_fits(Schedule& schedule, std::string_view heuristic, std::size_t pool_bytes);

// A pool size that serves the schedule under the named policy, run after run.
std::size_t footprint_of(const Schedule& schedule, std::string_view heuristic);

}  // namespace tidepool
