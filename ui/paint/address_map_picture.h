// The pool's address map, drawn once for the window and the PNG
// (SmartPool's Fig. 3): address upwards from 0 at the bottom against the
// steps of one iteration, each tensor a rectangle in its role's colour from
// the step it was placed to the step it was freed, the parts whose contents
// were in flight to or from the host in the transfer colours, parked blocks
// (dead, still taken) darkened and outlined, the holes at the peak step with
// the largest free block in its own colour, the footprint and pool lines,
// and beside the plot a strip with the pool at one step (the peak, or in
// the window the step under the pointer), since one step's column can be a
// pixel wide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ui/paint/chart.h"
#include "ui/paint/painter.h"
#include "ui/scene/address_map.h"

namespace tidepool::ui::paint {

// What the window adds: the step under the pointer, whose column is marked
// and whose pool the strip shows. The PNG shows the peak.
struct AddressMapFocus {
  int step = -1;  // -1: none (the strip shows the peak)
  // Blocks whose names hold this are outlined (name_matches; empty: none).
  std::string_view search;
  const MapBlock* pinned = nullptr;  // outlined more boldly; points into the scene
};

// Where the picture puts things: the drawing, the window's hit tests and the
// tests use the same numbers.
struct AddressMapLayout {
  Box plot;
  LinearScale x;  // step to pixels: step s is the column [x(s), x(s + 1))
  LinearScale y;  // byte address to pixels, 0 at the bottom of the plot
  Box strip;      // the pool at one step, right of the plot, on the same y scale
  // Rectangles of a block: its life (first to last step) and the steps it
  // was parked after it (empty where it was not).
  Box life_box(const MapBlock& b) const;
  Box parked_box(const MapBlock& b) const;
};
// One piece of the blocks as drawn, in drawing order: a block by itself
// (its life, its transfers, its parking, its outline and its name), or,
// in a map of more than 20 000 blocks, a run of pixel rows of one pixel
// column that blocks of one colour, narrower than a pixel, cover.
struct BlockPiece {
  static constexpr std::uint32_t kMergedRun = ~std::uint32_t{0};
  std::uint32_t block = kMergedRun;  // into the scene's blocks, or kMergedRun
  std::uint32_t colour = 0;          // a merged run's
  Box box;                           // a merged run's
};

// The blocks by the steps their boxes span (life and parking): which of
// them cross a range of steps, without a pass over every block. Made once
// per scene, for the pointer (block_at).
struct BlocksBySteps {
  std::vector<std::uint32_t> order;  // into the scene's blocks, by first step
  std::vector<int> first;            // their first steps, ascending
  std::size_t leaves = 0;            // a power of two >= order.size()
  std::vector<int> reach;            // a tree over `order`: the last step its blocks' boxes reach
};

// What drawing a map works out from every block, kept between frames by
// the window's view, so that a frame of a big map (a 10^6-event snapshot's
// half a million blocks) costs what it draws rather than what the map
// holds. Each part is worked out again when what it depends on changes,
// and only then:
//   the highest address         the scene
//   the blocks as drawn         the scene and the layout's plot and scales
//                               (the view's size, a comparison's axes)
//   the pool the strip shows    the scene and the step
//   the blocks a search finds   the scene and the search
//   the blocks by their steps   the scene (block_at: the pointer's block)
//   the pinned block            the scene and its key
// "The scene" is its generation (ui/scene/generation.h) and its blocks'
// storage: a map built again into the same object, or a copy, is another
// scene. A map made by hand (generation 0) is worked out afresh at every
// draw. The pictures fill it; nothing else reads its parts.
struct AddressMapCache {
  std::uint64_t generation = 0;
  const MapBlock* blocks = nullptr;
  std::size_t block_count = 0;
  std::optional<std::size_t> own_top;
  std::optional<std::pair<Box, std::pair<LinearScale, LinearScale>>> pieces_for;  // plot, x, y
  std::vector<BlockPiece> pieces;
  std::optional<Occupancy> strip;  // its step is strip->step
  std::optional<std::string> found_for;
  std::vector<std::uint32_t> found;  // into the scene's blocks
  std::optional<BlocksBySteps> by_steps;
  std::optional<std::pair<BlockKey, const MapBlock*>> pinned;
  // Keeps what was worked out from `scene`; forgets it all otherwise.
  // Whether `scene` can be kept (not one made by hand).
  bool use(const AddressMapScene& scene);
};

// `cache`: the view's (null: work out everything afresh).
AddressMapLayout address_map_layout(const Painter& p, const AddressMapScene& scene, const Box& area,
                                    AddressMapCache* cache = nullptr);
// The highest address the plot shows: the pool, the footprint and every
// block (own), and the scene's axis_bytes beside them.
std::size_t address_map_own_top(const AddressMapScene& scene);
std::size_t address_map_top(const AddressMapScene& scene, AddressMapCache* cache = nullptr);

// The block drawn at `at`: the last of the scene's blocks (the one drawn on
// top) whose life or parked box holds it; null where none does.
const MapBlock* block_at(const AddressMapLayout& l, const AddressMapScene& scene, Point at,
                         AddressMapCache* cache = nullptr);
// find_block, remembered in `cache` while the scene and the key stay.
const MapBlock* find_block(const AddressMapScene& scene, const BlockKey& key, AddressMapCache* cache);

// The blocks as draw_address_map draws them on layout `l`, in order.
std::vector<BlockPiece> blocks_as_drawn(const AddressMapLayout& l, const AddressMapScene& scene);

// Fills `area`; an empty scene gives a picture that says so.
void draw_address_map(Painter& p, const AddressMapScene& scene, const Box& area, const AddressMapFocus& focus = {},
                      AddressMapCache* cache = nullptr);

}  // namespace tidepool::ui::paint
