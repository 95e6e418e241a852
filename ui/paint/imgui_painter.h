// The Painter onto an ImGui draw list, for the window's views (ui/views/).
// Text is the window's current font, whatever size is asked for: ImGui
// scales its bitmap font only by blurring it.
#pragma once

#include <cstdint>

#include <imgui.h>

#include "ui/paint/painter.h"

namespace tidepool::ui {

// 0xRRGGBB to ImGui's packed colour.
inline ImU32 im_colour(std::uint32_t rgb, float alpha = 1.0f) {
  return IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, static_cast<int>(alpha * 255.0f));
}

namespace paint {

class ImGuiPainter final : public Painter {
 public:
  // Draws into `draw` (the window's draw list, say), which must outlive the
  // painter; text is measured with the current ImGui font.
  explicit ImGuiPainter(ImDrawList* draw) : draw_(draw) {}

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
  ImDrawList* draw_;
};

}  // namespace paint
}  // namespace tidepool::ui
