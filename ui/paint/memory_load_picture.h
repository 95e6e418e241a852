// The memory-load picture, drawn once for the window and the PNG. Above:
// the memory load and the pool extent after every step of the last
// iterations, one sample per step, with the budget (and AutoSwap's load
// limit) and the peak marked. Below: one small panel per quantity over the
// whole run, one point per iteration: peak load and footprint, loss,
// accuracy, images per second; four across a wide picture, two by two in
// a narrow one. Where the device computes no values (sim) the loss and
// accuracy panels say "simulated: no numbers" instead of a line at zero.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ui/paint/chart.h"
#include "ui/paint/painter.h"
#include "ui/scene/memory_load.h"

namespace tidepool::ui::paint {

// What the window adds: the sample under the pointer, marked on the curves.
struct MemoryLoadFocus {
  int sample = -1;  // into the scene's points; -1: none
};

// Where the picture puts things: the drawing, the window's hit tests and the
// tests use the same numbers.
struct MemoryLoadLayout {
  Box curves;     // load and extent against the recent steps
  LinearScale x;  // sample index to pixels: sample i holds over [x(i), x(i + 1))
  LinearScale y;  // bytes to pixels
  // Per iteration: peak load and footprint, loss, accuracy, images/s; each
  // panel's iteration number to pixels.
  // None (empty boxes) where the view is too short for them beside the
  // curves: with_panels false.
  bool with_panels = true;
  std::array<Box, 4> panels;
  std::array<LinearScale, 4> panel_x;
};
// What drawing the curves works out from every sample, kept between frames
// by the window's view, so that a frame of a big trace (a 10^6-event
// snapshot's million samples) costs what it draws rather than what the
// scene holds. Each part is worked out again when what it depends on
// changes, and only then:
//   the highest bytes, the iterations' first samples   the scene
//   the area under the load, the load and extent        the scene and the
//     curves (per pixel column where dense)             curves' box and scales
// "The scene" is its generation (ui/scene/generation.h) and its samples'
// storage; curves made by hand (generation 0) are worked out afresh at
// every draw. The picture fills it; nothing else reads its parts.
struct MemoryLoadCache {
  std::uint64_t generation = 0;
  const LoadPoint* points = nullptr;
  std::size_t point_count = 0;
  std::optional<std::size_t> own_top;
  std::optional<std::vector<std::size_t>> iteration_starts;  // into the points
  std::optional<std::pair<Box, std::pair<LinearScale, LinearScale>>> curves_for;  // curves, x, y
  std::vector<Box> load_area;  // filled faintly under the load
  std::vector<Point> load, extent;
  // Keeps what was worked out from `scene`; forgets it all otherwise.
  // Whether `scene` can be kept (not one made by hand).
  bool use(const MemoryLoadScene& scene);
};

// `cache`: the view's (null: work out everything afresh).
MemoryLoadLayout memory_load_layout(const Painter& p, const MemoryLoadScene& scene, const Box& area,
                                    MemoryLoadCache* cache = nullptr);
// The highest bytes the curves' axis shows: the budget, the peak, every
// sample's load and extent (own), and the scene's axis_bytes beside them.
std::size_t memory_load_own_top(const MemoryLoadScene& scene);
std::size_t memory_load_top(const MemoryLoadScene& scene, MemoryLoadCache* cache = nullptr);

// Fills `area`; an empty scene gives a picture that says so.
void draw_memory_load(Painter& p, const MemoryLoadScene& scene, const Box& area, const MemoryLoadFocus& focus = {},
                      MemoryLoadCache* cache = nullptr);

}  // namespace tidepool::ui::paint
