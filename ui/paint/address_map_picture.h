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

#include <string_view>

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
AddressMapLayout address_map_layout(const Painter& p, const AddressMapScene& scene, const Box& area);
// The highest address the plot shows: the pool, the footprint and every
// block (own), and the scene's axis_bytes beside them.
std::size_t address_map_own_top(const AddressMapScene& scene);
std::size_t address_map_top(const AddressMapScene& scene);

// Fills `area`; an empty scene gives a picture that says so.
void draw_address_map(Painter& p, const AddressMapScene& scene, const Box& area, const AddressMapFocus& focus = {});

}  // namespace tidepool::ui::paint
