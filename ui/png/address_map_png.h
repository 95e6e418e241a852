// The pool's address map drawn with OpenCV for a --batch run folder
// (SmartPool's Fig. 3): address upwards from 0 at the bottom against the
// steps of one iteration, each tensor a rectangle in its role's colour from
// the step it was placed to the step it was freed, the parts whose contents
// were in flight to or from the host in the transfer colours, the holes at
// the peak step with the largest one marked, and the footprint and pool
// lines.
#pragma once

#include <opencv2/core.hpp>

#include "ui/png/canvas.h"
#include "ui/scene/address_map.h"

namespace tidepool::ui {

// Where the picture puts things, shared by the drawing and its tests.
struct AddressMapLayout {
  cv::Rect plot;
  png::LinearScale x;  // step to pixels: step s is the column [x(s), x(s + 1))
  png::LinearScale y;  // byte address to pixels, 0 at the bottom of the plot
};
AddressMapLayout address_map_layout(const AddressMapScene& scene, int width, int height);

// A width x height BGR picture (at least 320 x 200: std::invalid_argument
// otherwise). An empty scene gives a picture that says so.
cv::Mat draw_address_map(const AddressMapScene& scene, int width, int height);

}  // namespace tidepool::ui
