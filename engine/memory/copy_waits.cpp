#include "engine/memory/copy_waits.h"

#include "engine/memory/allocator.h"
#include "engine/memory/copy_fences.h"
#include "engine/memory/replay.h"

namespace tidepool {
namespace {

// The executor's pool's fences, with tensors for copies. The executor
// fences a block at every free of a tensor whose offload the compute
// stream has not waited for (engine/run/executor.cpp): with async
// transfers, every free of an offloaded tensor, the forward one while its
// copy runs and the backward one after (a finished copy costs no wait, but
// a block taken back from parking was never waited for, and its copy may
// still run). The next block placed over a fenced range, unless it is the
// tensor's own taken back, waits. Copy threads fence nothing: the host
// waits for their copy before the free.
class Watch final : public PoolObserver {
 public:
  Watch(const Schedule& s, CopyWaits& out)
      : s_(s), out_(out), fences_copies_(s.settings.memory.copy_engine == CopyEngine::stream) {}

  void on_pool_event(const PoolEvent& e) override {
    if (e.event < 0 || e.event >= static_cast<int>(s_.steps.size())) return;
    const auto step = static_cast<std::size_t>(e.event);
    switch (e.action) {
      case PoolAction::free:
      case PoolAction::park:
        if (fences_copies_ && s_.tensors[static_cast<std::size_t>(e.id)].offloaded)
          fences_.add(e.block, static_cast<int>(e.id));
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
  bool fences_copies_;
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
  if (!s.can_park()) return out;  // sync transfers: each copy is waited for before its tensor is freed
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
