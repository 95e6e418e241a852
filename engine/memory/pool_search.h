// vDNN++'s search for the pool a heuristic needs (Shriram et al., §IV-B):
// the smallest initial pool that serves an allocation sequence, found by
// simulation.
//
//   1. Start at the sequence's peak memory load (every size rounded up to
//      kAllocGranularity), the least any placement could use.
//   2. Replay the sequence through a fresh allocator with that pool.
//   3. When a request fails, grow the pool by (request size − the largest
//      free block at that moment) — the memory the request lacked, as its
//      policy counts it (Allocator::lacking_bytes: pytorch lacked a whole
//      segment's room) — and restart from the beginning. Where the policy
//      can tell what the same request would lack in the grown pool without
//      replaying (Allocator::lacking_in_pool), the pools that would fail
//      alike are counted as restarts and stepped over; where it places
//      independently of the pool's size (Allocator::widen), the replay goes
//      on from the failed request. Both find what replaying finds.
//
// The result is a *sufficient* pool, not necessarily the minimal one: a
// heuristic can serve a sequence in a smaller pool and fail in a larger one
// (vDNN++'s example A1(5) A2(2) A3(1) D2 A4(1) D1 D3 A5(8): best fit serves
// it with 9 units and not with 11), so sizes between the start and the
// result are not all insufficient, and a search started above a working
// size can end above it. Trying every size byte by byte would be exact and
// impractical. Because the requests repeat identically every iteration, a
// pool that serves one pass serves them all — for a policy that does not
// learn; for smartpool, replay as many iterations as it needs to settle.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocator.h"
#include "engine/memory/replay.h"

namespace tidepool {

struct PoolSearch {
  std::size_t start_bytes = 0;  // where the search began
  std::size_t pool_bytes = 0;   // a pool that serves the sequence
  int restarts = 0;             // pools that failed before it
  // Replays run from the first request: restarts + 1, fewer where the
  // policy went on in a widened pool or stepped over pools that would
  // fail alike (Allocator::widen, Allocator::lacking_in_pool).
  int replays = 0;
  TraceReplay replay;           // the successful replay at pool_bytes
};

using AllocatorFactory = std::function<std::unique_ptr<Allocator>(std::size_t pool_bytes)>;

// Searches with a fresh allocator from `make` per replay. `start_bytes` 0
// starts at the trace's peak load. Throws std::invalid_argument for a
// malformed trace and std::runtime_error if the pool outgrows twice
// total_alloc_bytes (every request's claim end to end) without serving it
// (a policy that never fits; none of the registered ones).
// `park_horizon`: as for replay().
PoolSearch search_pool_size(const AllocTrace& trace, const AllocatorFactory& make, std::size_t start_bytes = 0,
                            int park_horizon = kParkUntilNeeded);
// The same for a registered heuristic (std::invalid_argument for an unknown name).
PoolSearch search_pool_size(const AllocTrace& trace, std::string_view heuristic, std::size_t start_bytes = 0,
                            int park_horizon = kParkUntilNeeded);

// The pool a planned schedule needs under a heuristic in a real run: its
// persistent tensors placed once, then `iterations` iterations (two by
// default: the first, and the steady state a learning policy settles into;
// every further iteration starts from the same state). Use this rather
// than the footprint of an unbounded replay where that footprint is not a
// pool size: high-end places offloaded blocks at the top of whatever pool
// it is given, and exact reports the ideal footprint while its offsets need
// best fit's room.
// `park_horizon`: as Schedule::park_horizon (0: nothing parked).
PoolSearch search_pool_size(const Schedule& schedule, std::string_view heuristic, int park_horizon = 0,
                            int iterations = 2);

// The park horizons a plan tries, most parking first: the more blocks stay
// parked, the fewer forward layers wait for copies and the more tensors
// come back without one.
inline constexpr int kParkHorizons[] = {kParkUntilNeeded, 4, 2, 1};

// The first of kParkHorizons with which two iterations of `train` run in
// `pool`, and that replay; 0 and none when none does or nothing can be
// parked. Parking holds memory at the peak and can fragment a tight pool
// that serves the unparked schedule, which is why it is decided per pool.
struct ParkChoice {
  int horizon = 0;
  std::optional<ScheduleReplay> replay;
};
ParkChoice park_in(const Schedule& train, const ScheduleTraces& traces, std::string_view heuristic, std::size_t pool);

}  // namespace tidepool
