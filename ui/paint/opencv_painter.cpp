#include "ui/paint/opencv_painter.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <opencv2/imgproc.hpp>

namespace tidepool::ui::paint {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
// Curves and markers keep a sixteenth of a pixel: OpenCV takes their points
// in fixed point with this many fractional bits.
constexpr int kShift = 4;

double font_scale(TextSize size) {
  switch (size) {
    case TextSize::small: return 0.42;
    case TextSize::label: return 0.5;
    case TextSize::title: return 0.68;
  }
  return 0.42;
}

// Hershey fonts have glyphs for printable ASCII only.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E) c = '?';
  return out;
}

// A coordinate to the nearest pixel boundary; clamped first, so a shape far
// outside the picture (a zoomed-in block) cannot overflow an int.
int snap(float v) { return static_cast<int>(std::lround(std::clamp(v, -1e6f, 1e6f))); }

cv::Point fixed_point(Point p, cv::Point offset) {
  constexpr float one = 1 << kShift;
  return {static_cast<int>(std::lround((std::clamp(p.x, -1e6f, 1e6f) - static_cast<float>(offset.x)) * one)),
          static_cast<int>(std::lround((std::clamp(p.y, -1e6f, 1e6f) - static_cast<float>(offset.y)) * one))};
}

int stroke(float thickness) { return std::max(1, static_cast<int>(std::lround(thickness))); }

// The pixels a shape through `points` can touch, `pad` wider on each side.
cv::Rect bounds_of(std::span<const Point> points, int pad) {
  float x0 = 1e6f, y0 = 1e6f, x1 = -1e6f, y1 = -1e6f;
  for (const Point& p : points) {
    x0 = std::min(x0, p.x);
    y0 = std::min(y0, p.y);
    x1 = std::max(x1, p.x);
    y1 = std::max(y1, p.y);
  }
  if (x1 < x0) return {};
  return cv::Rect(cv::Point(snap(x0) - pad, snap(y0) - pad), cv::Point(snap(x1) + pad + 1, snap(y1) + pad + 1));
}

}  // namespace

cv::Scalar bgr(std::uint32_t rgb) {
  return cv::Scalar((rgb >> 0) & 0xFF, (rgb >> 8) & 0xFF, (rgb >> 16) & 0xFF);
}

OpenCvPainter::OpenCvPainter(cv::Mat& image) : image_(image), clips_{cv::Rect(0, 0, image.cols, image.rows)} {}

template <typename Draw>
void OpenCvPainter::draw_clipped(const cv::Rect& bounds, Colour colour, Draw draw) {
  const cv::Rect clip = clips_.back();
  if (colour.alpha <= 0 || clip.empty()) return;
  if (colour.alpha >= 1) {
    cv::Mat target = image_(clip);  // OpenCV clips every shape at the ROI's edges
    draw(target, clip.tl());
    return;
  }
  // Translucent: drawn opaque onto a copy of the pixels it may touch, then
  // blended back (pixels it left alone blend with themselves).
  const cv::Rect area = bounds & clip;
  if (area.empty()) return;
  cv::Mat target = image_(area);
  cv::Mat copy = target.clone();
  draw(copy, area.tl());
  cv::addWeighted(copy, colour.alpha, target, 1.0 - colour.alpha, 0, target);
}

void OpenCvPainter::fill_rect(const Box& box, Colour colour) {
  int x0 = snap(std::min(box.x0, box.x1)), x1 = snap(std::max(box.x0, box.x1));
  int y0 = snap(std::min(box.y0, box.y1)), y1 = snap(std::max(box.y0, box.y1));
  x1 = std::max(x1, x0 + 1);  // a thin block still shows
  y1 = std::max(y1, y0 + 1);
  const cv::Rect r = cv::Rect(cv::Point(x0, y0), cv::Point(x1, y1)) & clips_.back();
  if (r.empty() || colour.alpha <= 0) return;
  cv::Mat target = image_(r);
  if (colour.alpha >= 1) {
    target.setTo(bgr(colour.rgb));
    return;
  }
  const cv::Mat solid(target.size(), target.type(), bgr(colour.rgb));
  cv::addWeighted(solid, colour.alpha, target, 1.0 - colour.alpha, 0, target);
}

void OpenCvPainter::line(Point a, Point b, Colour colour, float thickness) {
  const int t = stroke(thickness);
  const cv::Point pa(snap(a.x), snap(a.y)), pb(snap(b.x), snap(b.y));
  const Point ends[] = {a, b};
  draw_clipped(bounds_of(ends, t + 1), colour, [&](cv::Mat& target, cv::Point offset) {
    cv::line(target, pa - offset, pb - offset, bgr(colour.rgb), t, cv::LINE_8);
  });
}

void OpenCvPainter::polyline(std::span<const Point> points, Colour colour, float thickness) {
  if (points.size() < 2) return;
  const int t = stroke(thickness);
  draw_clipped(bounds_of(points, t + 2), colour, [&](cv::Mat& target, cv::Point offset) {
    std::vector<cv::Point> curve;
    curve.reserve(points.size());
    for (const Point& p : points) curve.push_back(fixed_point(p, offset));
    cv::polylines(target, curve, false, bgr(colour.rgb), t, cv::LINE_AA, kShift);
  });
}

void OpenCvPainter::fill_convex(std::span<const Point> points, Colour colour) {
  if (points.size() < 3) return;
  draw_clipped(bounds_of(points, 2), colour, [&](cv::Mat& target, cv::Point offset) {
    std::vector<cv::Point> shape;
    shape.reserve(points.size());
    for (const Point& p : points) shape.push_back(fixed_point(p, offset));
    cv::fillConvexPoly(target, shape, bgr(colour.rgb), cv::LINE_AA, kShift);
  });
}

// The box of a line of Hershey text: from the top of its capitals to the
// bottom of its descenders.
Point OpenCvPainter::text_size(std::string_view text, TextSize size) const {
  int baseline = 0;
  const cv::Size s = cv::getTextSize(printable(text), kFont, font_scale(size), 1, &baseline);
  return {static_cast<float>(s.width), static_cast<float>(s.height + baseline)};
}

void OpenCvPainter::text(Point at, std::string_view text, Colour colour, TextSize size, HAlign h, VAlign v) {
  if (text.empty()) return;
  const std::string s = printable(text);
  int baseline = 0;
  const cv::Size extent = cv::getTextSize(s, kFont, font_scale(size), 1, &baseline);
  const Point corner = aligned_top_left(
      at, {static_cast<float>(extent.width), static_cast<float>(extent.height + baseline)}, h, v);
  const cv::Point origin(snap(corner.x), snap(corner.y) + extent.height);  // putText's point is on the baseline
  const cv::Rect bounds(origin.x - 2, origin.y - extent.height - 2, extent.width + 4, extent.height + baseline + 4);
  draw_clipped(bounds, colour, [&](cv::Mat& target, cv::Point offset) {
    cv::putText(target, s, origin - offset, kFont, font_scale(size), bgr(colour.rgb), 1, cv::LINE_AA);
  });
}

void OpenCvPainter::push_clip(const Box& box) {
  const cv::Rect r(cv::Point(snap(box.x0), snap(box.y0)), cv::Point(snap(box.x1), snap(box.y1)));
  clips_.push_back(r & clips_.back());
}

void OpenCvPainter::pop_clip() {
  if (clips_.size() > 1) clips_.pop_back();
}

}  // namespace tidepool::ui::paint
