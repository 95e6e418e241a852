// The one loop every allocation in Tidepool goes through: a block asked for
// by id goes through the parking layer (engine/memory/parking.h) to an
// allocator, and every figure about the pool is computed here, once, as the
// events come. The executor's device pool (engine/memory/device_pool.h), the
// dry run of a schedule, `tidepool replay` on a trace, the pool-size search
// and the fragmentation scenario all drive a PoolReplay; they differ only
// in where the events come from and in what they observe.
//
//   auto allocator = make_allocator("best-fit", pool_bytes);
//   PoolReplay pool(*allocator, schedule.park_horizon);
//   pool.start_iteration();
//   auto offset = pool.place(tensor, {bytes, tensor, role, will_offload}, step);
//   pool.free(tensor, step, /*after_copy=*/true);      // parked: its copy may still read it
//   pool.figures();  // peak load (and by role), footprint, largest free, parked and holes at the peak
//
// The figures it computes are defined in docs/memory.md#what-the-figures-mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocator.h"
#include "engine/memory/parking.h"
#include "engine/memory/pool_event.h"

namespace tidepool {

class PoolReplay {
 public:
  // `park_horizon`: the most blocks parked at once (Schedule::park_horizon).
  explicit PoolReplay(Allocator& allocator, int park_horizon = kParkUntilNeeded, PoolObserver* observer = nullptr);

  Allocator& allocator() const { return allocator_; }
  // Between iterations (nothing parked): the schedule's horizon.
  void set_park_horizon(int horizon) { parking_.set_horizon(horizon); }
  void set_observer(PoolObserver* observer) { observer_ = observer; }

  // The figures start again from the pool as it is now (the blocks that
  // stay, such as parameters, count in the load and the extent).
  void start_iteration();

  // Places a block of round_up(request.bytes) for `id` (which must not be
  // live): its own parked block when still parked and of that size,
  // otherwise the allocator's choice, parked blocks given back oldest first
  // while there is no room. Nothing when it does not fit even then
  // (failure() says how short the pool fell). Throws std::logic_error if
  // the policy returns a block that overlaps a taken one, runs past the
  // pool or is misaligned: a drawing, a dry run or a real run built on such
  // a block would be wrong.
  std::optional<std::size_t> place(std::int64_t id, const AllocRequest& request, int event);
  // Whether the last place() took back the id's own parked block.
  bool reclaimed() const { return parking_.reclaimed(); }
  // Frees `id`'s block at once, or parks it when `after_copy` (its copy to
  // the host may still be reading it). Throws std::logic_error for an id
  // that is not live.
  // (A pool whose horizon is 0 parks nothing: after_copy is a plain free.)
  void free(std::int64_t id, int event, bool after_copy = false);

  bool live(std::int64_t id) const { return blocks_.count(id) != 0; }
  Range block_of(std::int64_t id) const { return blocks_.at(id).range; }

  struct Failure {
    std::size_t request_bytes = 0;       // rounded up
    std::size_t largest_free_bytes = 0;  // the policy's largest free block then
    std::size_t lacking_bytes = 0;       // what the policy lacked for it (Allocator::lacking_bytes)
  };
  const Failure& failure() const { return failure_; }

  // The pool now: the allocator's figures with parked blocks out of the
  // load (they are dead) and in the extent (their bytes are taken).
  PoolStats stats() const { return parking_.stats(); }
  std::size_t load_bytes() const { return load_; }
  std::size_t parked_blocks() const { return parking_.parked_blocks(); }
  const PoolFigures& figures() const { return figures_; }
  // The largest free range below the extent now (the definition above).
  Range largest_free_below_extent() const { return largest_free_below_extent(stats()); }
  // Taken blocks (live and parked) by offset, and the parked ones.
  const std::map<std::size_t, std::size_t>& taken() const { return taken_; }  // offset -> end
  bool parked_at(std::size_t offset) const { return parked_.count(offset) != 0; }

 private:
  Range largest_free_below_extent(const PoolStats& now) const;
  void take(std::size_t offset, std::size_t bytes);
  void release(std::size_t offset);
  // The load now is the iteration's peak so far: the figures at the peak
  // are taken from the pool as it is.
  void note_peak(const PoolStats& now, int event);
  void report(PoolAction action, std::int64_t id, Range block, bool reclaimed, int event);
  void given_back(int event);

  Allocator& allocator_;
  Parking parking_;
  PoolObserver* observer_;
  struct LiveBlock {
    Range range;
    Role role;
  };
  std::unordered_map<std::int64_t, LiveBlock> blocks_;  // live blocks by id
  std::set<std::size_t> parked_;                    // offsets of parked blocks
  std::map<std::size_t, std::size_t> taken_;        // offset -> end, live and parked
  std::set<std::pair<std::size_t, std::size_t>> gaps_;  // (bytes, offset) between taken blocks
  std::size_t load_ = 0;
  RoleBytes load_by_role_{};  // load_, split by the role of each live block
  PoolFigures figures_;
  Failure failure_;
};

// A trace through a fresh loop on `allocator`, stopping at the first alloc
// it cannot place. Ids double as tensor ids where they fit an int (so
// smartpool can learn), frees marked after_copy are parked, and each event
// reaches the loop as its schedule step where it has one (trace_of; -1 for
// the persistent tensors, as a real run reports them), else as its index. Throws std::invalid_argument for a malformed trace
// (validate) and std::logic_error as PoolReplay::place does.
struct TraceReplay {
  bool fits = true;
  int failed_event = -1;  // index of the first alloc the pool could not place (-1: none)
  PoolReplay::Failure failure;
  PoolStats stats;        // the pool after the replay (or at the failure)
  PoolFigures figures;    // of the whole trace
};
TraceReplay replay(const AllocTrace& trace, Allocator& allocator, int park_horizon = kParkUntilNeeded,
                   PoolObserver* observer = nullptr);
// The same on a loop that already holds blocks (a second iteration): the
// trace may free what earlier ones placed, and the loop refuses
// (std::logic_error) a free of a block it does not hold. The figures
// start again.
TraceReplay replay(const AllocTrace& trace, PoolReplay& pool);

// A replay that stopped at event `from` (a request it could not place) going
// on, in the same loop, after its allocator was widened (Allocator::widen):
// what replay() into a fresh loop of the wider pool would give, without
// placing events [0, from) again. Only for a loop that parks nothing
// (horizon 0): a parking loop gives parked blocks back while it fails.
TraceReplay resume_replay(const AllocTrace& trace, PoolReplay& pool, std::size_t from);

// A schedule's dry run: its persistent tensors, then two iterations, in a
// pool of `pool_bytes` under `heuristic`, parking at most `park_horizon`
// offloaded blocks at once (Schedule::park_horizon); what a real run with
// the same settings places, offset for offset, because it goes through the
// same loop.
struct ScheduleReplay {
  std::size_t pool_bytes = 0;
  TraceReplay first, steady;  // the second iteration is what every later one repeats
  // Where it did not fit: the largest pool known, without replaying, to
  // fail at the same request (fails_alike_to; pool_bytes where none is).
  std::size_t fails_alike_to = 0;
  bool fits() const { return first.fits && steady.fits; }
};
ScheduleReplay replay_schedule(const Schedule& schedule, std::string_view heuristic, std::size_t pool_bytes,
                               int park_horizon, PoolObserver* observer = nullptr);

// The two traces replay_schedule replays (the persistent tensors with the
// first iteration, then the next), made once by a caller that replays one
// schedule in many pools (the planner's fit and parking checks).
// Their replays are answered from engine/memory/replay_memo.h when the
// same were made before in this process.
struct ScheduleTraces {
  explicit ScheduleTraces(const Schedule& schedule);
  AllocTrace first, steady;
  std::uint64_t fingerprint;  // of both (replay_memo.h)
};
ScheduleReplay replay_schedule(const ScheduleTraces& traces, std::string_view heuristic, std::size_t pool_bytes,
                               int park_horizon, PoolObserver* observer = nullptr);

}  // namespace tidepool
