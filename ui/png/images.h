// The three pictures (ui/paint/) drawn onto OpenCV images, for the files a
// --batch run writes (run_pictures.h) and for the tests that read their
// pixels back. The window draws the same functions with ImGui.
#pragma once

#include <opencv2/core.hpp>

#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/timeline.h"

namespace tidepool::ui::png {

// A width x height BGR picture, the scene drawn over the whole of it (at
// least 320 x 200, where anything is readable: std::invalid_argument
// otherwise). An empty scene gives a picture that says so.
cv::Mat timeline_image(const TimelineScene& scene, int width, int height);
cv::Mat address_map_image(const AddressMapScene& scene, int width, int height);
cv::Mat memory_load_image(const MemoryLoadScene& scene, int width, int height);

}  // namespace tidepool::ui::png
