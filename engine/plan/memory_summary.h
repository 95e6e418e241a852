// The figures of a MemoryPlan (engine/plan/memory_plan.h), as plain numbers:
// what `tidepool plan` prints in a row, summary.json and `--batch`'s memory
// lines write, and the window's Stats and Controls show. They all print
// this one struct, made by MemoryPlan::summary(), so they cannot disagree.
#pragma once

#include <cstddef>

#include "engine/memory/figures.h"
#include "engine/memory/pool_event.h"

namespace tidepool {

struct MemorySummary {
  std::size_t pool_bytes = 0;          // the pool the run gets (its budget)
  std::size_t needed_pool_bytes = 0;   // what its schedules need
  std::size_t minimum_pool_bytes = 0;  // the smallest budget that works
  // One steady-state iteration in the pool (engine/memory/replay.h defines them).
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;
  std::size_t largest_free_at_peak_bytes = 0;
  std::size_t offloaded_bytes = 0;  // copied to the host per iteration
  // Host memory the offloads use. Pinned: their slots (compressed: two
  // staging slots); with --host-memory pageable, the pinned staging
  // buffers their copies pass through, and pageable_bytes their slots.
  std::size_t pinned_bytes = 0;
  std::size_t pageable_bytes = 0;
  std::size_t uncompressed_pinned_bytes = 0;
  std::size_t load_limit_bytes = 0;    // AutoSwap's (0: none)
  int park_horizon = 0;                // blocks async offloads keep parked at once (kParkUntilNeeded: all)
  std::size_t parking_pool_bytes = 0;  // a pool that parks more (0: none)
  std::size_t arena_bytes = 0;         // device memory reserved for the run
  // The steady iteration's peak load by role (sums to peak_load_bytes),
  // and beside it the parked and the free bytes below the extent then.
  RoleBytes peak_load_by_role{};
  std::size_t parked_at_peak_bytes = 0;
  std::size_t holes_at_peak_bytes = 0;
  double competitive_ratio() const {
    return tidepool::competitive_ratio(footprint_bytes, peak_load_bytes);
  }
};

}  // namespace tidepool
