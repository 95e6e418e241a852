// The Painter onto a BGR cv::Mat, for the --batch PNGs (ui/png/). Fills and
// straight lines are not anti-aliased, so a rectangle of a palette colour
// holds exactly that colour (the tests read pixels back); text, curves and
// markers are. Text is OpenCV's Hershey font, ASCII only (other bytes are
// drawn as '?').
#pragma once

#include <vector>

#include <opencv2/core.hpp>

#include "ui/paint/painter.h"

namespace tidepool::ui::paint {

// A palette colour (0xRRGGBB) as OpenCV's BGR scalar.
cv::Scalar bgr(std::uint32_t rgb);

class OpenCvPainter final : public Painter {
 public:
  // Draws onto `image` (CV_8UC3), which must outlive the painter.
  explicit OpenCvPainter(cv::Mat& image);

  void fill_rect(const Box& box, Colour colour) override;
  void line(Point a, Point b, Colour colour, float thickness = 1) override;
  void polyline(std::span<const Point> points, Colour colour, float thickness = 1) override;
  void fill_convex(std::span<const Point> points, Colour colour) override;
  Point text_size(std::string_view text, TextSize size) const override;
  void text(Point at, std::string_view text, Colour colour, TextSize size, HAlign h = HAlign::left,
            VAlign v = VAlign::top) override;
  void push_clip(const Box& box) override;
  void pop_clip() override;

 private:
  // Runs `draw(target, offset)` onto the clip rectangle's part of the image,
  // points shifted by `offset`, blending the result in when `colour` is not
  // opaque; `bounds` (image coordinates) limits the part copied to blend.
  template <typename Draw>
  void draw_clipped(const cv::Rect& bounds, Colour colour, Draw draw);

  cv::Mat& image_;
  std::vector<cv::Rect> clips_;  // the current one last; the whole image first
};

}  // namespace tidepool::ui::paint
