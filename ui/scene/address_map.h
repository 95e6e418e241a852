// The pool's address map of one iteration as data (SmartPool's Fig. 3):
// address against step, each tensor a rectangle from the step it was placed
// to the step it was freed, and the holes between them. The figures (the
// peak, the footprint, the largest free block at the peak, the pool after
// each step) are the replay loop's, as the iteration's events carry them
// (engine/memory/replay.h): the map draws them, it does not compute them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// The pool right after a step (its last allocation event).
struct StepPool {
  std::size_t load_bytes = 0, extent_bytes = 0, largest_free_bytes = 0;
};

struct AddressMapScene {
  std::int64_t iteration = -1;  // -1: nothing to show yet
  int steps = 0;                // steps of the iteration (x axis: 0..steps)
  std::size_t pool_bytes = 0;   // y axis: 0..pool_bytes
  std::vector<MapBlock> blocks;
  // When the load last reached its peak: the step and the load; the
  // iteration's footprint (the allocator's highest extent: cnmem's claimed
  // pools); the free holes below the extent then (drawn), and the largest
  // free block then (the figure).
  int peak_step = 0;
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;
  std::vector<MapHole> holes_at_peak;
  std::optional<MapHole> largest_free_at_peak;
  // The pool after each step that allocated or freed (steps without such
  // an event keep the one before's).
  std::vector<StepPool> after_step;
  // Two runs compared (`tidepool view A B`): the axes reach at least this
  // high and this far, the other run's, so that both maps share scales.
  std::size_t axis_bytes = 0;
  int axis_steps = 0;
  // Which build this is (ui/scene/generation.h): 0 for a map made by hand.
  std::uint64_t generation = 0;
  bool empty() const { return iteration < 0; }
};

// The map of the latest iteration that finished and whose events are all
// in the snapshot (none overwritten), against a pool of `pool_bytes`.
AddressMapScene build_address_map(const RingSnapshot& events, std::size_t pool_bytes);
// The map of one given iteration (empty if its events are not all there).
AddressMapScene build_address_map(const RingSnapshot& events, std::size_t pool_bytes,
                                  std::int64_t iteration);

// The blocks at one step of a map (after that step's allocations, before
// its frees): the live ones sorted by offset, the parked ones, and the
// holes between them all up to the pool's end. The view's occupancy strip
// draws it for the step under the mouse, or the peak.
struct Occupancy {
  int step = 0;
  std::size_t pool_bytes = 0;
  std::vector<const MapBlock*> live;    // into the map's blocks
  std::vector<const MapBlock*> parked;  // dead, but still taken
  std::vector<MapHole> holes;           // below the pool end
};
Occupancy occupancy_at(const AddressMapScene& map, int step);

// The `n` largest blocks alive at the peak, largest first (ties: the lower
// offset): what the peak is mostly made of. Into the map's blocks.
std::vector<const MapBlock*> largest_at_peak(const AddressMapScene& map, std::size_t n);

// Whether a block's name holds `search` (ASCII letters in either case); an
// empty search finds nothing.
bool name_matches(const MapBlock& b, std::string_view search);

// What a block is, line by line, as its tooltip and its pinned panel show
// it: name, layer, role, offset, size, lifetime, and its transfers. A
// traced block (a PyTorch snapshot's) is named by its frames and lives
// between events: no layer, no role.
std::vector<std::string> block_details(const MapBlock& b, bool traced = false);

// A block as the window pins it: where it starts, in the pool and in the
// iteration. Two blocks never share both (names do: a tensor's, a
// snapshot's frame labels), and a run places a tensor alike every
// iteration, so the key finds it again in the next map.
struct BlockKey {
  std::size_t offset = 0;
  int first_step = 0;
  bool operator==(const BlockKey&) const = default;
};
inline BlockKey key_of(const MapBlock& b) { return {b.offset, b.first_step}; }
const MapBlock* find_block(const AddressMapScene& map, const BlockKey& key);

}  // namespace tidepool::ui
