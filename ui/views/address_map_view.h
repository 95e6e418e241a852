// The pool's address map of the latest finished iteration in the window: the
// picture is ui/paint/address_map_picture.h's, the same as address_map.png;
// the view adds the pointer: the strip beside the plot follows the step
// under it (the peak otherwise), and a tooltip tells the block or the step.
#pragma once

#include "ui/views/view.h"

namespace tidepool::ui {

class AddressMapView {
 public:
  void draw(const Frame& frame);
};

}  // namespace tidepool::ui
