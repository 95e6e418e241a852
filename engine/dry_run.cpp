#include "engine/dry_run.h"

#include <algorithm>
#include <stdexcept>

namespace tidepool {

DryRun dry_run(const Schedule& s, Allocator& allocator, bool with_persistent) {
  DryRun r;
  r.offset.assign(s.tensors.size(), 0);
  auto place = [&](int t, int step, bool will_offload) {
    const TensorInfo& info = s.tensors[t].info;
    const auto offset = allocator.allocate({info.bytes(), t, info.role, will_offload});
    if (!offset) {
      r.fits = false;
      r.failed_step = step;
      return false;
    }
    r.offset[t] = *offset;
    const PoolStats st = allocator.stats();
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
    else if (st.kind == StepKind::free)
      allocator.free(r.offset[st.tensor]);
  }
  r.stats = allocator.stats();
  return r;
}

namespace {
// "Unbounded": far more than any device has, small enough that offsets never overflow.
constexpr std::size_t kUnbounded = std::size_t{1} << 50;
}  // namespace

Replay replay_twice(const Schedule& s, std::string_view heuristic) {
  auto allocator = make_allocator(heuristic, kUnbounded);
  Replay r;
  r.first = dry_run(s, *allocator);
  if (!r.first.fits) throw std::logic_error("an unbounded pool could not place the schedule");
  r.steady = dry_run(s, *allocator, /*with_persistent=*/false);
  if (!r.steady.fits) throw std::logic_error("an unbounded pool could not place the schedule twice");
  // The persistent tensors count in both iterations' load.
  r.steady.peak_load_bytes = std::max(r.steady.peak_load_bytes, s.persistent_bytes);
  return r;
}

std::size_t footprint_of(const Schedule& s, std::string_view heuristic) {
  return replay_twice(s, heuristic).pool_bytes();
}

}  // namespace tidepool
