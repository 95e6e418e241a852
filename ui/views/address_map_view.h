// The pool's address map of the latest finished iteration in the window: the
// picture is ui/paint/address_map_picture.h's, the same as address_map.png;
// the view adds the pointer: the strip beside the plot follows the step
// under it (the peak otherwise), and a tooltip tells the block or the step;
// above it, a search box, the largest blocks at the peak, and the details
// of a block pinned by a click.
#pragma once

#include <optional>
#include <string>

#include "ui/paint/address_map_picture.h"
#include "ui/scene/address_map.h"
#include "ui/views/view.h"

namespace tidepool::ui {

class AddressMapView {
 public:
  void draw(const Frame& frame);
  // The pinned block, in the map it was last drawn with (null: none).
  const MapBlock* pinned(const AddressMapScene& map) const { return pinned_ ? find_block(map, *pinned_) : nullptr; }

 private:
  char search_[64] = "";  // the "find a tensor" box
  std::optional<BlockKey> pinned_;
  // What the picture works out from every block, kept while the map, the
  // view's size, the strip's step and the search stay.
  paint::AddressMapCache picture_;
};

}  // namespace tidepool::ui
