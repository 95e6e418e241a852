// The figures of the latest finished iteration and the run's state: the
// rows of ui/scene/stats_table.h, drawn as a table.
#pragma once

#include "ui/views/view.h"

namespace tidepool::ui {

class StatsView {
 public:
  void draw(const Frame& frame);
};

}  // namespace tidepool::ui
