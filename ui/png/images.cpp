#include "ui/png/images.h"

#include <stdexcept>
#include <string>

#include "ui/paint/address_map_picture.h"
#include "ui/paint/memory_load_picture.h"
#include "ui/paint/opencv_painter.h"
#include "ui/paint/timeline_picture.h"
#include "ui/scene/colours.h"

namespace tidepool::ui::png {
namespace {

// A picture of width x height with `draw(painter, area)` over all of it.
template <typename Draw>
cv::Mat image_of(int width, int height, Draw draw) {
  if (width < 320 || height < 200)
    throw std::invalid_argument("picture of " + std::to_string(width) + " x " + std::to_string(height) +
                                " pixels: at least 320 x 200 needed");
  cv::Mat image(height, width, CV_8UC3, paint::bgr(kBackground));
  paint::OpenCvPainter painter(image);
  draw(painter, paint::Box{0, 0, static_cast<float>(width), static_cast<float>(height)});
  return image;
}

}  // namespace

cv::Mat timeline_image(const TimelineScene& scene, int width, int height) {
  return image_of(width, height, [&](paint::Painter& p, const paint::Box& area) { paint::draw_timeline(p, scene, area); });
}

cv::Mat address_map_image(const AddressMapScene& scene, int width, int height) {
  return image_of(width, height,
                  [&](paint::Painter& p, const paint::Box& area) { paint::draw_address_map(p, scene, area); });
}

cv::Mat memory_load_image(const MemoryLoadScene& scene, int width, int height) {
  return image_of(width, height,
                  [&](paint::Painter& p, const paint::Box& area) { paint::draw_memory_load(p, scene, area); });
}

}  // namespace tidepool::ui::png
