// The stream timeline: one lane per stream (compute, offload D2H, prefetch
// H2D), a span per layer and transfer, compute stalls marked in red.
// Mouse wheel zooms around the pointer, dragging pans; "follow" keeps the
// newest iterations in view.
#pragma once

#include "ui/views/view.h"

namespace tidepool::ui {

class TimelineView {
 public:
  void draw(const Frame& frame);

 private:
  bool follow_ = true;
  double view_start_us_ = 0, view_span_us_ = 1;
};

}  // namespace tidepool::ui
