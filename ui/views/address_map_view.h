// The pool's address map of the latest finished iteration in the window: the
// picture is ui/paint/address_map_picture.h's, the same as address_map.png;
// the view adds the pointer: the strip beside the plot follows the step
// under it (the peak otherwise), and a tooltip tells the block or the step;
// above it, a search box, the largest blocks at the peak, and the details
// of a block pinned by a click.
#pragma once

#include <string>

#include "ui/views/view.h"

namespace tidepool::ui {

class AddressMapView {
 public:
  void draw(const Frame& frame);
  // The pinned block's name ("": none).
  const std::string& pinned() const { return pinned_; }

 private:
  char search_[64] = "";  // the "find a tensor" box
  std::string pinned_;    // the pinned block's name ("": none)
};

}  // namespace tidepool::ui
