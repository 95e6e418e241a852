// The stream timeline drawn with OpenCV for a --batch run folder: one lane
// per stream (compute, offload D2H, prefetch H2D), every span a rectangle in
// its kind's colour, compute stalls filled red and hatched over the whole
// lane so even a one-pixel stall shows, iteration boundaries, a time axis in
// milliseconds and a legend.
#pragma once

#include <opencv2/core.hpp>

#include "engine/device/device.h"
#include "ui/png/canvas.h"
#include "ui/scene/timeline.h"

namespace tidepool::ui {

// Where the picture puts things, shared by the drawing and its tests.
struct TimelineLayout {
  cv::Rect plot;          // the three lanes together
  png::LinearScale x;     // microseconds (the scene's clock) to pixels
  cv::Rect lane(Stream s) const;  // one stream's band inside the plot
};
TimelineLayout timeline_layout(const TimelineScene& scene, int width, int height);

// A width x height BGR picture (at least 320 x 200: std::invalid_argument
// otherwise). An empty scene gives a picture that says so.
cv::Mat draw_timeline(const TimelineScene& scene, int width, int height);

}  // namespace tidepool::ui
