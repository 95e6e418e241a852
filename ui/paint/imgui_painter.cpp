#include "ui/paint/imgui_painter.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tidepool::ui::paint {
namespace {

// To the nearest pixel boundary, as OpenCvPainter does, so both outputs
// cover the same pixels.
float snap(float v) { return std::round(std::clamp(v, -1e6f, 1e6f)); }

ImU32 packed(Colour c) { return im_colour(c.rgb, std::clamp(c.alpha, 0.0f, 1.0f)); }

std::vector<ImVec2> im_points(std::span<const Point> points) {
  std::vector<ImVec2> out;
  out.reserve(points.size());
  for (const Point& p : points) out.emplace_back(p.x, p.y);
  return out;
}

}  // namespace

void ImGuiPainter::fill_rect(const Box& box, Colour colour) {
  const float x0 = snap(std::min(box.x0, box.x1)), y0 = snap(std::min(box.y0, box.y1));
  const float x1 = std::max(snap(std::max(box.x0, box.x1)), x0 + 1);  // a thin block still shows
  const float y1 = std::max(snap(std::max(box.y0, box.y1)), y0 + 1);
  draw_->AddRectFilled({x0, y0}, {x1, y1}, packed(colour));
}

void ImGuiPainter::line(Point a, Point b, Colour colour, float thickness) {
  // Through the middle of the pixels, and without ImGui's anti-aliasing, so
  // a one-pixel line is one row of its colour, as OpenCV draws it.
  const ImDrawListFlags flags = draw_->Flags;
  draw_->Flags &= ~(ImDrawListFlags_AntiAliasedLines | ImDrawListFlags_AntiAliasedLinesUseTex);
  draw_->AddLine({snap(a.x) + 0.5f, snap(a.y) + 0.5f}, {snap(b.x) + 0.5f, snap(b.y) + 0.5f}, packed(colour),
                 std::max(1.0f, std::round(thickness)));
  draw_->Flags = flags;
}

void ImGuiPainter::polyline(std::span<const Point> points, Colour colour, float thickness) {
  if (points.size() < 2) return;
  const std::vector<ImVec2> curve = im_points(points);
  draw_->AddPolyline(curve.data(), static_cast<int>(curve.size()), packed(colour), ImDrawFlags_None, thickness);
}

void ImGuiPainter::fill_convex(std::span<const Point> points, Colour colour) {
  if (points.size() < 3) return;
  const std::vector<ImVec2> shape = im_points(points);
  draw_->AddConvexPolyFilled(shape.data(), static_cast<int>(shape.size()), packed(colour));
}

Point ImGuiPainter::text_size(std::string_view text, TextSize) const {
  const ImVec2 s = ImGui::CalcTextSize(text.data(), text.data() + text.size());
  return {s.x, s.y};
}

void ImGuiPainter::text(Point at, std::string_view text, Colour colour, TextSize size, HAlign h, VAlign v) {
  if (text.empty()) return;
  const Point corner = aligned_top_left(at, text_size(text, size), h, v);
  draw_->AddText({snap(corner.x), snap(corner.y)}, packed(colour), text.data(), text.data() + text.size());
}

void ImGuiPainter::push_clip(const Box& box) {
  draw_->PushClipRect({snap(box.x0), snap(box.y0)}, {snap(box.x1), snap(box.y1)}, true);
}

void ImGuiPainter::pop_clip() { draw_->PopClipRect(); }

}  // namespace tidepool::ui::paint
