#include "engine/memory/copy_waits.h"

#include "engine/memory/allocator.h"
#include "engine/memory/copy_fences.h"
#include "engine/memory/replay.h"

namespace tidepool {
namespace {

// The executor's pool's fences, with tensors for copies: a block freed
// (or parked) by an after_copy step fences its range; the next block
// placed over it, unless it is the tensor's own taken back, waits.
class Watch final : public PoolObserver {
 public:
  Watch(const Schedule& s, CopyWaits& out) : s_(s), out_(out) {}

  void on_pool_event(const PoolEvent& e) override {
    if (e.event < 0 || e.event >= static_cast<int>(s_.steps.size())) return;
    const auto step = static_cast<std::size_t>(e.event);
    switch (e.action) {
      case PoolAction::free:
      case PoolAction::park:
        if (s_.steps[step].after_copy) fences_.add(e.block, static_cast<int>(e.id));
        break;
      case PoolAction::place:
        if (e.reclaimed)
          out_.reclaimed[static_cast<std::size_t>(e.id)] = true;
        else
          for (int t : fences_.take_overlapping(e.block)) out_.at_step[step].push_back(t);
        break;
      case PoolAction::give_back: break;
    }
  }

 private:
  const Schedule& s_;
  CopyWaits& out_;
  CopyFences<int> fences_;
};

}  // namespace

int CopyWaits::waits() const {
  int n = 0;
  for (const std::vector<int>& w : at_step) n += static_cast<int>(w.size());
  return n;
}

CopyWaits copy_waits(const Schedule& s, std::string_view heuristic, std::size_t pool_bytes, int park_horizon) {
  CopyWaits out;
  out.at_step.resize(s.steps.size());
  out.reclaimed.assign(s.tensors.size(), false);
  if (!s.can_park()) return out;  // no copy runs on after its tensor is freed
  // The first iteration as a run places it (every fence is passed at its
  // end: the device is idle), then the steady one, which every later
  // iteration repeats, watched.
  const ScheduleTraces traces(s);
  auto allocator = make_allocator(heuristic, pool_bytes);
  PoolReplay pool(*allocator, park_horizon);
  if (!replay(traces.first, pool).fits) return out;
  Watch watch(s, out);
  pool.set_observer(&watch);
  if (!replay(traces.steady, pool).fits) {
    out.at_step.assign(s.steps.size(), {});
    out.reclaimed.assign(s.tensors.size(), false);
  }
  return out;
}

}  // namespace tidepool
