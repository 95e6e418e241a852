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
MemoryLoadLayout memory_load_layout(const Painter& p, const MemoryLoadScene& scene, const Box& area);
// The highest bytes the curves' axis shows: the budget, the peak, every
// sample's load and extent (own), and the scene's axis_bytes beside them.
std::size_t memory_load_own_top(const MemoryLoadScene& scene);
std::size_t memory_load_top(const MemoryLoadScene& scene);

// Fills `area`; an empty scene gives a picture that says so.
void draw_memory_load(Painter& p, const MemoryLoadScene& scene, const Box& area, const MemoryLoadFocus& focus = {});

}  // namespace tidepool::ui::paint
