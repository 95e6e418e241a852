// The stream timeline, drawn once for the window and the PNG: one lane per
// stream (compute, offload D2H, prefetch H2D), every span a rectangle in its
// kind's colour, compute stalls hatched red over the whole lane so even a
// one-pixel stall shows, iteration boundaries with their stall times, a time
// axis in milliseconds, the title with the stall total and a legend.
#pragma once

#include "engine/observe/events.h"
#include "ui/paint/chart.h"
#include "ui/paint/painter.h"
#include "ui/scene/timeline.h"

namespace tidepool::ui::paint {

// What the window adds: the stretch of time shown (its zoom and pan) and
// the span under the pointer. The PNG shows the whole scene.
struct TimelineFocus {
  // On the scene's clock; an empty range shows the whole scene.
  double start_us = 0, end_us = 0;
  const TimelineSpan* hovered = nullptr;  // outlined; points into the scene
};

// Where the picture puts things: the drawing, the window's hit tests and the
// tests use the same numbers.
struct TimelineLayout {
  Box plot;       // the lanes together
  int lanes = 3;  // compute, offload, prefetch; and comm when the scene all-reduces
  LinearScale x;  // microseconds (the scene's clock) to pixels
  Box lane(Stream s) const;  // one stream's band inside the plot
  // The rectangle a span is drawn in: a stall takes its lane's height, a
  // transfer stream's wait a thin band, any other span its lane less an inset.
  Box span_box(const TimelineSpan& span) const;
};
TimelineLayout timeline_layout(const Painter& p, const TimelineScene& scene, const Box& area,
                               const TimelineFocus& focus = {});

// A stream's lane as the picture names it: "compute", "offload D2H", "prefetch H2D", "comm".
const char* lane_name(Stream s);

// Fills `area`; an empty scene gives a picture that says so.
void draw_timeline(Painter& p, const TimelineScene& scene, const Box& area, const TimelineFocus& focus = {});

}  // namespace tidepool::ui::paint
