#include "engine/memory/copy_waits.h"

#include "engine/memory/allocator.h"
#include "engine/memory/copy_fences.h"
#include "engine/memory/replay.h"

namespace tidepool {
namespace {

// The executor's waits for copies (engine/run/executor.cpp), with tensors
// for copies. On the streams it fences a block at every free of a tensor
// whose offload the compute stream has not waited for: with async
// transfers, every free of an offloaded tensor, the forward one while its
// copy runs and the backward one after (a finished copy costs no wait, but
// a block taken back from parking was never waited for, and its copy may
// still run). The next block placed over a fenced range, unless it is the
// tensor's own taken back, waits. With copy threads the host waits for the
// copy at the tensor's first free instead, and fences nothing.
class Watch final : public PoolObserver {
 public:
  Watch(const Schedule& s, CopyWaits& out)
      : s_(s), out_(out), threads_(s.settings.memory.copy_engine == CopyEngine::threads),
        waited_(s.tensors.size(), false) {}

  void on_pool_event(const PoolEvent& e) override {
    if (e.event < 0 || e.event >= static_cast<int>(s_.steps.size())) return;
    const auto step = static_cast<std::size_t>(e.event);
    const auto t = static_cast<std::size_t>(e.id);
    switch (e.action) {
      case PoolAction::free:
      case PoolAction::park:
        if (!s_.tensors[t].offloaded) break;
        if (!threads_) {
          fences_.add(e.block, static_cast<int>(t));
        } else if (!waited_[t]) {
          waited_[t] = true;
          out_.at_step[step].push_back(static_cast<int>(t));
        }
        break;
      case PoolAction::place:
        if (e.reclaimed)
          out_.reclaimed[t] = true;
        else
          for (int x : fences_.take_overlapping(e.block)) out_.at_step[step].push_back(x);
        break;
      case PoolAction::give_back: break;
    }
  }

 private:
  const Schedule& s_;
  CopyWaits& out_;
  bool threads_;
  std::vector<bool> waited_;  // copy threads: per tensor, its copy waited for at a free
  CopyFences<int> fences_;
};

}  // namespace

int CopyWaits::waits() const {
  int n = 0;
  for (const std::vector<int>& w : at_step) n += static_cast<int>(w.size());
  return n;
}

CopyWaits copy_waits(const Schedule& s, const ScheduleTraces& traces, std::string_view heuristic, std::size_t pool_bytes,
                     int park_horizon) {
  CopyWaits out;
  out.at_step.resize(s.steps.size());
  out.reclaimed.assign(s.tensors.size(), false);
  if (!s.can_park()) return out;  // sync transfers: each copy is waited for before its tensor is freed
  // The first iteration as a run places it (every fence is passed at its
  // end: the device is idle), then the steady one, which every later
  // iteration repeats, watched.
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
