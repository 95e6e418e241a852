// The pool's address map of one iteration as data (SmartPool's Fig. 3):
// address against step, each tensor a rectangle from the step it was placed
// to the step it was freed, the holes between them, the largest free block
// at the peak, and the occupancy of the pool at the end of the events seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/observe/events.h"
#include "engine/observe/sinks/ring_sink.h"
#include "engine/core/tensor.h"

namespace tidepool::ui {

struct MapBlock {
  int tensor = -1;
  std::string name;
  Role role = Role::activation;
  std::size_t offset = 0, bytes = 0;
  // Steps [first_step, last_step]: placed before first_step's work, freed
  // after last_step's. Persistent tensors span the whole iteration.
  int first_step = 0, last_step = 0;
  bool persistent = false;
  // Steps during which the block's contents were moving: to the host from
  // offload_step until the block was freed; back from the host from
  // first_step until prefetch_done_step. -1 where there was no transfer.
  int offload_step = -1;
  int prefetch_done_step = -1;
  // Async offloads: after last_step the tensor is dead, but its block stays
  // taken (parked, while its copy to the host may run) through this step;
  // -1 where it was not parked.
  int parked_until_step = -1;
  std::size_t end() const { return offset + bytes; }
  bool parked_at(int step) const { return last_step < step && step <= parked_until_step; }
};

struct MapHole {
  std::size_t offset = 0, bytes = 0;
};

struct AddressMapScene {
  std::int64_t iteration = -1;  // -1: nothing to show yet
  int steps = 0;                // steps of the iteration (x axis: 0..steps)
  std::size_t pool_bytes = 0;   // y axis: 0..pool_bytes
  std::vector<MapBlock> blocks;
  // When the load peaked: the step, the load, the extent (one past the
  // highest live byte) and the free holes below the extent then.
  int peak_step = 0;
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;  // the allocator's highest extent in the iteration (cnmem: its claimed pools)
  std::vector<MapHole> holes_at_peak;
  std::optional<MapHole> largest_free_at_peak;
  bool empty() const { return iteration < 0; }
};

// The map of the latest iteration that finished and whose events are all
// in the snapshot (none overwritten), against a pool of `pool_bytes`.
AddressMapScene build_address_map(const RingSnapshot& events, std::size_t pool_bytes);
// The map of one given iteration (empty if its events are not all there).
AddressMapScene build_address_map(const RingSnapshot& events, std::size_t pool_bytes,
                                  std::int64_t iteration);

// The pool at one step of a map (after that step's allocations, before its
// frees): the live blocks sorted by offset, the parked ones, and the holes
// between them all up to the pool's end. The view's occupancy strip shows
// it for the step under the mouse, or the peak.
struct Occupancy {
  int step = 0;
  std::size_t pool_bytes = 0;
  std::vector<const MapBlock*> live;    // into the map's blocks
  std::vector<const MapBlock*> parked;  // dead, but still taken
  std::vector<MapHole> holes;           // below the pool end
  std::size_t load_bytes = 0;     // the live blocks'
  std::size_t extent_bytes = 0;   // one past the highest taken byte
  std::size_t largest_hole_bytes = 0;  // below the extent
};
Occupancy occupancy_at(const AddressMapScene& map, int step);

}  // namespace tidepool::ui
