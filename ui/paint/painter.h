// The few drawing calls the timeline, the address map and the memory-load
// picture are made of. Each picture is one function over a Painter
// (timeline_picture.h, address_map_picture.h, memory_load_picture.h), so the
// window and the --batch PNGs draw the same thing: ImGuiPainter draws onto
// an ImGui draw list, OpenCvPainter onto a cv::Mat. Neither library is seen
// here.
//
// Coordinates are pixels from the top-left corner, y down. Both back ends
// snap a rectangle's edges to the nearest pixel boundary and widen one
// narrower than a pixel to one, so a block of a few bytes still shows and
// the two outputs cover the same pixels. Colours are the palette's
// 0xRRGGBB (ui/scene/colours.h) with an opacity.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace tidepool::ui::paint {

struct Point {
  float x = 0, y = 0;
};

// [x0, x1) x [y0, y1).
struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  float width() const { return x1 - x0; }
  float height() const { return y1 - y0; }
  bool contains(Point p) const { return p.x >= x0 && p.x < x1 && p.y >= y0 && p.y < y1; }
  bool operator==(const Box&) const = default;
};

struct Colour {
  std::uint32_t rgb = 0;
  float alpha = 1;  // 1: opaque
  // Not explicit: a palette colour is an opaque Colour wherever one is asked for.
  constexpr Colour(std::uint32_t rgb = 0, float alpha = 1) : rgb(rgb), alpha(alpha) {}
};

// Tick labels, names and legends; labels on a plot; a picture's title line.
enum class TextSize { small, label, title };
// Where a line of text sits against its anchor point: the text's box (as
// text_size measures it) starts, is centred or ends there.
enum class HAlign { left, centre, right };
enum class VAlign { top, middle, bottom };

// The top-left corner of a text box of `size` anchored at `at`.
inline Point aligned_top_left(Point at, Point size, HAlign h, VAlign v) {
  if (h == HAlign::centre) at.x -= size.x / 2;
  if (h == HAlign::right) at.x -= size.x;
  if (v == VAlign::middle) at.y -= size.y / 2;
  if (v == VAlign::bottom) at.y -= size.y;
  return at;
}

class Painter {
 public:
  virtual ~Painter() = default;

  virtual void fill_rect(const Box& box, Colour colour) = 0;
  // Straight lines are not anti-aliased, so a line of a palette colour
  // holds exactly that colour.
  virtual void line(Point a, Point b, Colour colour, float thickness = 1) = 0;
  // An open curve through `points`, anti-aliased.
  virtual void polyline(std::span<const Point> points, Colour colour, float thickness = 1) = 0;
  // A convex polygon (a marker: an arrow head, a dot), anti-aliased.
  virtual void fill_convex(std::span<const Point> points, Colour colour) = 0;

  // The width and height of one line of text: the box `text` aligns.
  virtual Point text_size(std::string_view text, TextSize size) const = 0;
  virtual void text(Point at, std::string_view text, Colour colour, TextSize size, HAlign h = HAlign::left,
                    VAlign v = VAlign::top) = 0;

  // Nothing is drawn outside the box until the matching pop_clip (boxes
  // nest: each is cut to the one before).
  virtual void push_clip(const Box& box) = 0;
  virtual void pop_clip() = 0;

  // An outline `thickness` pixels wide inside the box, drawn as four fills
  // so both back ends put it on the same pixels.
  void outline_rect(const Box& box, Colour colour, float thickness = 1) {
    const Box& b = box;
    if (b.width() <= 2 * thickness || b.height() <= 2 * thickness) return fill_rect(b, colour);
    fill_rect({b.x0, b.y0, b.x1, b.y0 + thickness}, colour);
    fill_rect({b.x0, b.y1 - thickness, b.x1, b.y1}, colour);
    fill_rect({b.x0, b.y0 + thickness, b.x0 + thickness, b.y1 - thickness}, colour);
    fill_rect({b.x1 - thickness, b.y0 + thickness, b.x1, b.y1 - thickness}, colour);
  }
};

}  // namespace tidepool::ui::paint
