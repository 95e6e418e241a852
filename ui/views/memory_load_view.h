// Memory-load curves: the load and the pool extent after every step of the
// last iterations against the budget line, with the peak marked; below, per
// iteration across the run, the peak load and footprint, the loss, the
// batch accuracy and images/s.
#pragma once

#include "ui/views/view.h"

namespace tidepool::ui {

class MemoryLoadView {
 public:
  void draw(const Frame& frame);
};

}  // namespace tidepool::ui
