// What the replay loop (engine/memory/replay.h) tells whoever watches it:
// each block placed, freed, parked or given back, with the pool's load and
// extent after it, and the figures of an iteration. Plain data, so the
// events of a run (engine/observe/events.h) can carry them as they are.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "engine/core/tensor.h"

namespace tidepool {

struct Range {
  std::size_t offset = 0, bytes = 0;
  std::size_t end() const { return offset + bytes; }
  bool operator==(const Range&) const = default;
};

// What happened to a block: placed for an id, freed, or, with async
// offloads (engine/memory/parking.h), freed but parked (the tensor is dead
// and the block stays taken while its copy to the host may run), and a
// parked block given back to the allocator. A parked block that its id is
// placed in again (a reclaim) ends with that placement.
enum class PoolAction : std::uint8_t { place, free, park, give_back };
const char* to_string(PoolAction a);

struct PoolEvent {
  int event = 0;  // the caller's clock: a schedule step, a trace event
  PoolAction action = PoolAction::place;
  std::int64_t id = 0;
  Range block;             // as placed (rounded up)
  bool reclaimed = false;  // place: the id's own parked block taken back, bytes and all
  // The pool after the event: load, extent and the largest free block
  // below the extent (engine/memory/replay.h defines them).
  std::size_t load_bytes = 0, extent_bytes = 0, largest_free_bytes = 0;
};

class PoolObserver {
 public:
  virtual ~PoolObserver() = default;
  virtual void on_pool_event(const PoolEvent& e) = 0;
};

// Bytes by the role of the blocks that hold them (engine/core/tensor.h),
// indexed by static_cast<int>(Role).
using RoleBytes = std::array<std::size_t, kRoleCount>;

// The figures of one iteration, as engine/memory/replay.h defines them.
struct PoolFigures {
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;
  int peak_event = -1;         // the event at which the load last reached its peak (-1: before any)
  Range largest_free_at_peak;  // its offset and size (bytes 0: none)
  // What lay below the extent at that moment: the load by role (its
  // entries sum to peak_load_bytes), and beside the load, not in it, the
  // parked blocks (dead, still taken) and the free bytes between them, so
  // that load + parked + holes is the extent then.
  RoleBytes peak_load_by_role{};
  std::size_t parked_at_peak_bytes = 0;
  std::size_t holes_at_peak_bytes = 0;
};

}  // namespace tidepool
