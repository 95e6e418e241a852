#include "engine/memory/dry_run.h"

#include <algorithm>
#include <stdexcept>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/parking.h"
#include "engine/memory/pool_search.h"

namespace tidepool {

DryRun dry_run(const Schedule& s, Allocator& allocator, bool with_persistent) {
  DryRun r;
  r.offset.assign(s.tensors.size(), 0);
  AsyncRelease pool(allocator, s.park_horizon);  // as the executor places: parked blocks and all
  auto place = [&](int t, int step, bool will_offload) {
    const TensorInfo& info = s.tensors[t].info;
    const auto offset = pool.allocate(t, {info.bytes(), t, info.role, will_offload});
    if (!offset) {
      r.fits = false;
      r.failed_step = step;
      return false;
    }
    r.offset[t] = *offset;
    const PoolStats st = pool.stats();
    r.footprint_bytes = std::max(r.footprint_bytes, st.extent_bytes);
    if (st.load_bytes >= r.peak_load_bytes) {
      r.peak_load_bytes = st.load_bytes;
      // Free space below the current extent: what fragmentation has left.
      r.largest_free_at_peak_bytes = std::min(st.largest_free_block_bytes, r.footprint_bytes - st.load_bytes);
    }
    return true;
  };
  if (with_persistent)
    for (int t : s.persistent)
      if (!place(t, -1, false)) break;
  for (int i = 0; r.fits && i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[i];
    if (st.kind == StepKind::alloc)
      place(st.tensor, i, st.will_offload);
    else if (s.parks(st))
      pool.free_after_copy(st.tensor, r.offset[st.tensor], s.tensors[st.tensor].info.bytes());
    else if (st.kind == StepKind::free)
      pool.free(r.offset[st.tensor]);
  }
  r.stats = pool.stats();
  return r;
}

Replay replay_twice(const Schedule& s, std::string_view heuristic) {
  // The pool comes from vDNN++'s search over two iterations rather than
  // from an unbounded replay: a policy that places at the top of the pool
  // (high-end) has no meaningful extent without a pool size.
  const PoolSearch search = search_pool_size(s, heuristic);
  Replay r = replay_in(s, heuristic, search.pool_bytes);
  if (!r.first.fits || !r.steady.fits)
    throw std::logic_error("the searched pool did not serve the schedule it was searched for");
  return r;
}

Replay replay_in(const Schedule& s, std::string_view heuristic, std::size_t pool_bytes) {
  auto allocator = make_allocator(heuristic, pool_bytes);
  Replay r;
  r.pool = pool_bytes;
  r.first = dry_run(s, *allocator);
  if (!r.first.fits) return r;
  r.steady = dry_run(s, *allocator, /*with_persistent=*/false);
  // The persistent tensors count in both iterations' load.
  r.steady.peak_load_bytes = std::max(r.steady.peak_load_bytes, s.persistent_bytes);
  return r;
}

std::optional<Replay> park_if_it_fits(Schedule& s, std::string_view heuristic, std::size_t pool_bytes) {
  s.park_horizon = 0;
  if (!s.can_park()) return std::nullopt;
  for (int horizon : kParkHorizons) {
    s.park_horizon = horizon;
    Replay parked = replay_in(s, heuristic, pool_bytes);
    if (parked.first.fits && parked.steady.fits) return parked;
  }
  s.park_horizon = 0;
  return std::nullopt;
}

std::size_t footprint_of(const Schedule& s, std::string_view heuristic) {
  return replay_twice(s, heuristic).pool_bytes();
}

}  // namespace tidepool
