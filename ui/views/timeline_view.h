// The stream timeline in the window: the picture is ui/paint/
// timeline_picture.h's, the same as timeline.png; the view adds the mouse
// wheel zooming around the pointer, dragging to pan, "follow newest" to keep
// the newest iterations in view, and a tooltip for the span under the
// pointer.
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
