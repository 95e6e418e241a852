#include "engine/memory/pool_search.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/core/fnv1a.h"
#include "engine/memory/replay_memo.h"

namespace tidepool {

PoolSearch search_pool_size(const AllocTrace& trace, const AllocatorFactory& make, std::size_t start_bytes,
                            int park_horizon) {
  validate(trace);
  PoolSearch s;
  s.start_bytes = start_bytes ? round_up(start_bytes) : peak_load_bytes(trace);
  // Every policy here serves the trace in a pool of all its claims end to
  // end (see total_alloc_bytes); past twice that the search is not
  // converging, and a policy that never fits must not hang the caller.
  const std::size_t total = total_alloc_bytes(trace);
  const std::size_t limit = std::max(s.start_bytes, total > SIZE_MAX / 2 ? SIZE_MAX : total * 2);
  std::size_t pool = s.start_bytes;
  std::unique_ptr<Allocator> allocator;
  std::unique_ptr<PoolReplay> loop;
  TraceReplay r;
  for (;;) {
    // A policy whose placements do not depend on the pool's size goes on
    // from the request that failed, in the pool grown: the same replay as
    // starting again (cnmem without an initial pool restarts hundreds of
    // times on a large network, each time a little further).
    if (loop && park_horizon == 0 && allocator->widen(pool)) {
      r = resume_replay(trace, *loop, static_cast<std::size_t>(r.failed_event));
    } else {
      loop.reset();  // before the allocator it points to
      allocator = make(pool);
      loop = std::make_unique<PoolReplay>(*allocator, park_horizon);
      r = replay(trace, *loop);  // the trace was validated above, once
      ++s.replays;
    }
    if (r.fits) {
      s.pool_bytes = pool;
      s.replay = std::move(r);
      return s;
    }
    // The memory the failed request lacked, as its policy counts it (the
    // request less the largest free block, or pytorch's segment less the
    // room for it); at least one granule, so that a policy failing with a
    // free block big enough (exact's accounting, a policy that declines a
    // fitting hole) still makes progress.
    auto grow_by = [&](std::size_t lacking) {
      const std::size_t grow = std::max(round_up(lacking), kAllocGranularity);
      if (pool > limit - std::min(limit, grow))
        throw std::runtime_error("pool search for '" + std::string(allocator->name()) + "' passed " +
                                 std::to_string(limit) + " bytes without serving the trace (event " +
                                 std::to_string(r.failed_event) + " still fails)");
      pool += grow;
      ++s.restarts;
    };
    grow_by(r.failure.lacking_bytes);
    // Pools the policy can tell would fail at the same request are
    // stepped over as replaying each would have (pytorch in a tight pool:
    // dozens of restarts, each 2 MiB further, before its segment fits),
    // parking or not: the loop's parking decides by the policy's answers.
    while (const std::optional<std::size_t> lacking = allocator->lacking_in_pool(pool)) {
      if (*lacking == 0) break;
      grow_by(*lacking);
    }
  }
}

PoolSearch search_pool_size(const AllocTrace& trace, std::string_view heuristic, std::size_t start_bytes,
                            int park_horizon) {
  make_allocator(heuristic, 0);  // an unknown name throws before any replay
  const std::string name(heuristic);
  return search_pool_size(trace, [&](std::size_t pool) { return make_allocator(name, pool); }, start_bytes,
                          park_horizon);
}

PoolSearch search_pool_size(const Schedule& schedule, std::string_view heuristic, int park_horizon, int iterations) {
  const AllocTrace trace = trace_of(schedule, iterations);
  const MemoRequests requests{{&trace}, fingerprint(trace, kFnv1aStart)};
  if (std::optional<PoolSearch> kept = find_pool_search(requests, heuristic, park_horizon)) return *kept;
  PoolSearch s = search_pool_size(trace, heuristic, 0, park_horizon);
  keep_pool_search(requests, heuristic, park_horizon, s);
  return s;
}

ParkChoice park_in(const Schedule& train, const ScheduleTraces& traces, std::string_view heuristic, std::size_t pool) {
  if (train.can_park())
    for (int horizon : kParkHorizons)
      if (ScheduleReplay r = replay_schedule(traces, heuristic, pool, horizon); r.fits()) return {horizon, std::move(r)};
  return {};
}

}  // namespace tidepool
