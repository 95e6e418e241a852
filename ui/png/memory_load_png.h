// The memory-load picture drawn with OpenCV for a --batch run folder. Above:
// the memory load and the pool extent after every step of the last
// iterations, one sample per step, with the budget line and the peak
// marked. Below: one small panel per quantity over the whole run, one point
// per iteration: peak load and footprint, loss, accuracy, images per second.
#pragma once

#include <array>

#include <opencv2/core.hpp>

#include "ui/png/canvas.h"
#include "ui/scene/memory_load.h"

namespace tidepool::ui {

// Where the picture puts things, shared by the drawing and its tests.
struct MemoryLoadLayout {
  cv::Rect curves;     // load and extent against the recent steps
  png::LinearScale x;  // sample index to pixels: sample i holds over [x(i), x(i + 1))
  png::LinearScale y;  // bytes to pixels
  // Per iteration: peak load and footprint, loss, accuracy, images/s.
  std::array<cv::Rect, 4> panels;
};
MemoryLoadLayout memory_load_layout(const MemoryLoadScene& scene, int width, int height);

// A width x height BGR picture (at least 320 x 200: std::invalid_argument
// otherwise). An empty scene gives a picture that says so.
cv::Mat draw_memory_load(const MemoryLoadScene& scene, int width, int height);

}  // namespace tidepool::ui
