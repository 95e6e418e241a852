// The pool's address map of the latest finished iteration (SmartPool's
// Fig. 3): address up, step across, every tensor a rectangle coloured by
// role, transfers in flight in their own colours, the largest free block at
// the peak outlined. Beside it, a strip with the pool at the step under the
// pointer (or at the peak).
#pragma once

#include "ui/views/view.h"

namespace tidepool::ui {

class AddressMapView {
 public:
  void draw(const Frame& frame);
};

}  // namespace tidepool::ui
