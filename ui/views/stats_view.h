// The figures of the latest finished iteration and the run's state.
#pragma once

#include "ui/views/view.h"

namespace tidepool::ui {

class StatsView {
 public:
  void draw(const Frame& frame);
};

}  // namespace tidepool::ui
