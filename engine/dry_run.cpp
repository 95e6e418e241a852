#include "engine/dry_run.h"

#include <limits>
#include <stdexcept>

namespace tidepool {

DryRun dry_run(const Schedule& s, Allocator& allocator, bool with_persistent) {
  DryRun r;
  r.offset.assign(s.tensors.size(), 0);
  auto place = [&](int t, int step) {
    const TensorInfo& info = s.tensors[t].info;
    const auto offset = allocator.allocate({info.bytes(), t, info.role, false});
    if (!offset) {
      r.fits = false;
      r.failed_step = step;
      return false;
    }
    r.offset[t] = *offset;
    return true;
  };
  if (with_persistent)
    for (int t : s.persistent)
      if (!place(t, -1)) break;
  for (int i = 0; r.fits && i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[i];
    if (st.kind == StepKind::alloc)
      place(st.tensor, i);
    else if (st.kind == StepKind::free)
      allocator.free(r.offset[st.tensor]);
  }
  r.stats = allocator.stats();
  return r;
}

std::size_t footprint_of(const Schedule& s, std::string_view heuristic) {
  // "Unbounded": far more than any device has, small enough that offsets never overflow.
  constexpr std::size_t kUnbounded = std::size_t{1} << 50;
  auto allocator = make_allocator(heuristic, kUnbounded);
  const DryRun r = dry_run(s, *allocator);
  if (!r.fits) throw std::logic_error("an unbounded pool could not place the schedule");
  return r.stats.peak_extent_bytes;
}

}  // namespace tidepool
