// Memory-load curves in the window: the picture is ui/paint/
// memory_load_picture.h's, the same as memory_load.png (the load and extent
// of the last iterations against the budget, and per iteration across the
// run the peak load and footprint, the loss, the batch accuracy and
// images/s); the view adds tooltips for the sample or iteration under the
// pointer (whose loss and accuracy, on a device that computes no values,
// are "simulated: no numbers").
#pragma once

#include "ui/paint/memory_load_picture.h"
#include "ui/views/view.h"

namespace tidepool::ui {

class MemoryLoadView {
 public:
  void draw(const Frame& frame);

 private:
  // What the picture works out from every sample, kept while the curves
  // and the view's size stay.
  paint::MemoryLoadCache picture_;
};

}  // namespace tidepool::ui
