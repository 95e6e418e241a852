// One drawing function per picture, two back ends: the window's ImGui
// painter and the PNGs' OpenCV painter get their calls from the same
// function. These tests record those calls: a PNG is exactly its call list
// replayed; measured with the window's font instead of OpenCV's, a picture
// makes the same shapes in the same places of its plot (only text moves);
// and what the window test looks for in a screenshot (the roles' colours,
// parked blocks, transfers in flight, the largest free block) is in the
// OpenCV picture too. Then the OpenCV painter's own promises.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "testing/picture_scenes.h"
#include "ui/paint/address_map_picture.h"
#include "ui/paint/chart.h"
#include "ui/paint/memory_load_picture.h"
#include "ui/paint/opencv_painter.h"
#include "ui/paint/timeline_picture.h"
#include "ui/layout.h"
#include "ui/scene/colours.h"
#include "ui/session_link.h"

namespace tidepool::ui {
namespace {

using testing::address_map_scene_with_parking;
using testing::big_address_map_scene;
using testing::big_memory_load_scene;
using testing::memory_load_scene;
using testing::timeline_scene;
using paint::Box;
using paint::Colour;
using paint::HAlign;
using paint::Point;
using paint::TextSize;
using paint::VAlign;

// ---- recording --------------------------------------------------------------

struct Call {
  enum class Kind { fill, line, polyline, convex, text, push_clip, pop_clip };
  Kind kind = Kind::fill;
  Box box;                    // fill, push_clip
  std::vector<Point> points;  // line (its two ends), polyline, convex; text: its anchor
  Colour colour;
  float thickness = 1;
  std::string text;
  TextSize size = TextSize::small;
  HAlign h = HAlign::left;
  VAlign v = VAlign::top;
};

using Measure = std::function<Point(std::string_view, TextSize)>;

// ImGui's default font (ProggyClean), which the window draws every size
// of text in: 7 pixels a character, 13 a line.
Point window_font(std::string_view text, TextSize) { return {7.0f * static_cast<float>(text.size()), 13.0f}; }

// Records every call, measures text with `measure`, and passes each call
// on to `also` where there is one.
class RecordingPainter final : public paint::Painter {
 public:
  explicit RecordingPainter(Measure measure, paint::Painter* also = nullptr)
      : measure_(std::move(measure)), also_(also) {}

  void fill_rect(const Box& box, Colour colour) override {
    calls.push_back({.kind = Call::Kind::fill, .box = box, .colour = colour});
    if (also_) also_->fill_rect(box, colour);
  }
  void line(Point a, Point b, Colour colour, float thickness) override {
    calls.push_back({.kind = Call::Kind::line, .points = {a, b}, .colour = colour, .thickness = thickness});
    if (also_) also_->line(a, b, colour, thickness);
  }
  void polyline(std::span<const Point> points, Colour colour, float thickness) override {
    calls.push_back({.kind = Call::Kind::polyline, .points = {points.begin(), points.end()}, .colour = colour,
                     .thickness = thickness});
    if (also_) also_->polyline(points, colour, thickness);
  }
  void fill_convex(std::span<const Point> points, Colour colour) override {
    calls.push_back({.kind = Call::Kind::convex, .points = {points.begin(), points.end()}, .colour = colour});
    if (also_) also_->fill_convex(points, colour);
  }
  Point text_size(std::string_view text, TextSize size) const override { return measure_(text, size); }
  void text(Point at, std::string_view text, Colour colour, TextSize size, HAlign h, VAlign v) override {
    calls.push_back({.kind = Call::Kind::text, .points = {at}, .colour = colour, .text = std::string(text),
                     .size = size, .h = h, .v = v});
    if (also_) also_->text(at, text, colour, size, h, v);
  }
  void push_clip(const Box& box) override {
    calls.push_back({.kind = Call::Kind::push_clip, .box = box});
    if (also_) also_->push_clip(box);
  }
  void pop_clip() override {
    calls.push_back({.kind = Call::Kind::pop_clip});
    if (also_) also_->pop_clip();
  }

  std::vector<Call> calls;

 private:
  Measure measure_;
  paint::Painter* also_;
};

void replay(const std::vector<Call>& calls, paint::Painter& onto) {
  for (const Call& c : calls) {
    switch (c.kind) {
      case Call::Kind::fill: onto.fill_rect(c.box, c.colour); break;
      case Call::Kind::line: onto.line(c.points[0], c.points[1], c.colour, c.thickness); break;
      case Call::Kind::polyline: onto.polyline(c.points, c.colour, c.thickness); break;
      case Call::Kind::convex: onto.fill_convex(c.points, c.colour); break;
      case Call::Kind::text: onto.text(c.points[0], c.text, c.colour, c.size, c.h, c.v); break;
      case Call::Kind::push_clip: onto.push_clip(c.box); break;
      case Call::Kind::pop_clip: onto.pop_clip(); break;
    }
  }
}

// OpenCV's text measures, as the PNGs are laid out with.
Measure opencv_font() {
  static cv::Mat unused(1, 1, CV_8UC3);
  static const paint::OpenCvPainter measures(unused);
  return [](std::string_view text, TextSize size) { return measures.text_size(text, size); };
}

// ---- pixels -----------------------------------------------------------------

constexpr int kWidth = 1400, kHeight = 800;
const Box kArea{0, 0, kWidth, kHeight};

cv::Mat blank() { return cv::Mat(kHeight, kWidth, CV_8UC3, paint::bgr(kBackground)); }

cv::Rect rect(const Box& b) {
  return cv::Rect(cv::Point(static_cast<int>(std::lround(b.x0)), static_cast<int>(std::lround(b.y0))),
                  cv::Point(static_cast<int>(std::lround(b.x1)), static_cast<int>(std::lround(b.y1))));
}

// How many pixels of `area` are exactly `rgb`.
int count(const cv::Mat& image, cv::Rect area, std::uint32_t rgb) {
  area &= cv::Rect(0, 0, image.cols, image.rows);
  const cv::Scalar s = paint::bgr(rgb);
  const cv::Vec3b want(static_cast<uchar>(s[0]), static_cast<uchar>(s[1]), static_cast<uchar>(s[2]));
  int n = 0;
  for (int y = area.y; y < area.y + area.height; ++y)
    for (int x = area.x; x < area.x + area.width; ++x) n += image.at<cv::Vec3b>(y, x) == want;
  return n;
}

// ---- the same calls for both outputs ---------------------------------------

// The three pictures as functions of a painter, with the plot whose shapes
// are data (the rest is furniture: axes, titles, legends).
struct Picture {
  std::string name;
  std::function<void(paint::Painter&)> draw;
  std::function<Box(const paint::Painter&)> plot;
};

std::vector<Picture> pictures() {
  static const TimelineScene timeline = timeline_scene();
  static const AddressMapScene map = address_map_scene_with_parking();
  static const MemoryLoadScene load = memory_load_scene();
  return {
      {"timeline", [](paint::Painter& p) { paint::draw_timeline(p, timeline, kArea); },
       [](const paint::Painter& p) { return paint::timeline_layout(p, timeline, kArea).plot; }},
      {"address map", [](paint::Painter& p) { paint::draw_address_map(p, map, kArea); },
       [](const paint::Painter& p) { return paint::address_map_layout(p, map, kArea).plot; }},
      {"memory load", [](paint::Painter& p) { paint::draw_memory_load(p, load, kArea); },
       [](const paint::Painter& p) { return paint::memory_load_layout(p, load, kArea).curves; }},
  };
}

TEST(Paint, APngIsItsCallListReplayed) {
  for (const Picture& picture : pictures()) {
    SCOPED_TRACE(picture.name);
    cv::Mat drawn = blank();
    paint::OpenCvPainter direct(drawn);
    RecordingPainter recorder(opencv_font(), &direct);
    picture.draw(recorder);
    ASSERT_GT(recorder.calls.size(), 50u);

    cv::Mat replayed = blank();
    paint::OpenCvPainter onto(replayed);
    replay(recorder.calls, onto);
    EXPECT_EQ(cv::norm(drawn, replayed, cv::NORM_INF), 0) << "the picture is nothing but its calls";
  }
}

// A shape of the data: a fill, a curve or a marker inside the plot, in the
// plot's own coordinates (0 to 1 across and down).
struct Shape {
  Call::Kind kind;
  std::uint32_t rgb;
  std::vector<Point> at;
};

std::vector<Shape> data_shapes(const std::vector<Call>& calls, const Box& plot) {
  auto relative = [&](Point p) {
    return Point{(p.x - plot.x0) / plot.width(), (p.y - plot.y0) / plot.height()};
  };
  auto inside = [&](Point p) {
    return p.x >= plot.x0 - 1 && p.x <= plot.x1 + 1 && p.y >= plot.y0 - 1 && p.y <= plot.y1 + 1;
  };
  std::vector<Shape> shapes;
  for (const Call& c : calls) {
    // Plates under labels are there because a label fit; labels are text,
    // and text is what another font moves.
    if (c.colour.rgb == paint::kPlotBackground) continue;
    std::vector<Point> points = c.points;
    if (c.kind == Call::Kind::fill) points = {{c.box.x0, c.box.y0}, {c.box.x1, c.box.y1}};
    else if (c.kind != Call::Kind::polyline && c.kind != Call::Kind::convex) continue;
    if (!std::all_of(points.begin(), points.end(), inside)) continue;
    Shape s{c.kind, c.colour.rgb, {}};
    for (Point p : points) s.at.push_back(relative(p));
    shapes.push_back(std::move(s));
  }
  return shapes;
}

std::set<std::uint32_t> colours_of(const std::vector<Call>& calls) {
  std::set<std::uint32_t> colours;
  for (const Call& c : calls)
    if (c.kind != Call::Kind::push_clip && c.kind != Call::Kind::pop_clip) colours.insert(c.colour.rgb);
  return colours;
}

TEST(Paint, TheWindowsFontMovesTextNotShapes) {
  for (const Picture& picture : pictures()) {
    SCOPED_TRACE(picture.name);
    RecordingPainter png(opencv_font()), window(window_font);
    picture.draw(png);
    picture.draw(window);
    const Box png_plot = picture.plot(png), window_plot = picture.plot(window);
    EXPECT_NE(png_plot.y0, window_plot.y0) << "the fonts differ, so the layouts do";
    // The same colours anywhere in the picture, and in the plot the same
    // shapes, in the same order, in the same places up to a pixel or so of
    // rounding.
    EXPECT_EQ(colours_of(png.calls), colours_of(window.calls));
    const std::vector<Shape> a = data_shapes(png.calls, png_plot), b = data_shapes(window.calls, window_plot);
    ASSERT_GT(a.size(), 4u);
    ASSERT_EQ(a.size(), b.size());
    const float tolerance_x = 1.5f / std::min(png_plot.width(), window_plot.width());
    const float tolerance_y = 1.5f / std::min(png_plot.height(), window_plot.height());
    for (std::size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE("shape " + std::to_string(i));
      EXPECT_EQ(a[i].kind, b[i].kind);
      EXPECT_EQ(a[i].rgb, b[i].rgb);
      ASSERT_EQ(a[i].at.size(), b[i].at.size());
      for (std::size_t k = 0; k < a[i].at.size(); ++k) {
        EXPECT_NEAR(a[i].at[k].x, b[i].at[k].x, tolerance_x);
        EXPECT_NEAR(a[i].at[k].y, b[i].at[k].y, tolerance_y);
      }
    }
  }
}

// ---- what the window test looks for, in the PNG -----------------------------

// A device that computes no values: its losses and accuracies are zeros,
// so their panels say so in words where the lines would be; the memory
// panels and images/s are drawn as ever.
TEST(Paint, MemoryLoadWithoutValuesSaysSoInTheLossAndAccuracyPanels) {
  MemoryLoadScene scene = memory_load_scene();
  auto in = [](const Box& b, Point p) { return p.x >= b.x0 && p.x <= b.x1 && p.y >= b.y0 && p.y <= b.y1; };
  for (bool computes_values : {true, false}) {
    SCOPED_TRACE(computes_values ? "computes values" : "sim");
    scene.computes_values = computes_values;
    RecordingPainter p(window_font);
    paint::draw_memory_load(p, scene, kArea);
    const paint::MemoryLoadLayout l = paint::memory_load_layout(p, scene, kArea);
    std::array<int, 4> lines{}, no_numbers{};
    for (const Call& c : p.calls)
      for (std::size_t k = 0; k < 4; ++k) {
        if (c.kind == Call::Kind::polyline && in(l.panels[k], c.points.front())) ++lines[k];
        if (c.kind == Call::Kind::text && c.text == kNoNumbers && in(l.panels[k], c.points.front())) ++no_numbers[k];
      }
    EXPECT_EQ(lines[0], 2) << "peak load and footprint";
    EXPECT_EQ(lines[3], 1) << "images/s";
    for (std::size_t k : {1, 2}) {
      EXPECT_EQ(lines[k], computes_values ? 1 : 0) << "panel " << k;
      EXPECT_EQ(no_numbers[k], computes_values ? 0 : 1) << "panel " << k;
    }
  }
}

TEST(Paint, AddressMapShowsParkedBlocksTransfersAndTheLargestFreeBlock) {
  const AddressMapScene scene = address_map_scene_with_parking();
  cv::Mat image = blank();
  paint::OpenCvPainter painter(image);
  paint::draw_address_map(painter, scene, kArea);
  const paint::AddressMapLayout l = paint::address_map_layout(painter, scene, kArea);
  const cv::Rect plot = rect(l.plot);

  for (Role r : {Role::weight, Role::activation, Role::activation_gradient, Role::workspace})
    EXPECT_GT(count(image, plot, role_colour(r)), 500) << to_string(r);
  EXPECT_GT(count(image, plot, kInFlightToHost), 500);
  EXPECT_GT(count(image, plot, kInFlightFromHost), 500);
  // The parked block (step 3): its role's colour darkened inside, outlined.
  const MapBlock& parked = scene.blocks.back();
  const cv::Rect parked_box = rect(l.parked_box(parked));
  ASSERT_GT(parked_box.width, 10);
  const cv::Rect inner(parked_box.x + 2, parked_box.y + 2, parked_box.width - 4, parked_box.height - 4);
  EXPECT_EQ(count(image, inner, paint::shade(role_colour(Role::activation), 0.4)), inner.area());
  EXPECT_GE(count(image, parked_box, kParked), 2 * (parked_box.width + parked_box.height) - 4) << "its outline";
  // The largest free block at the peak, in the peak's column and the strip.
  const MapHole& largest = *scene.largest_free_at_peak;
  const int y = l.y.px(static_cast<double>(largest.offset + largest.bytes / 2));
  const int column = static_cast<int>(l.x(scene.peak_step + 0.5));
  EXPECT_EQ(count(image, cv::Rect(column, y, 1, 1), kLargestHole), 1);
  EXPECT_EQ(count(image, cv::Rect(static_cast<int>((l.strip.x0 + l.strip.x1) / 2), y, 1, 1), kLargestHole), 1);

  // The window's pointer on step 3: the strip shows the pool then, the
  // parked block in it, and no largest free block (that is the peak's).
  cv::Mat focused = blank();
  paint::OpenCvPainter focused_painter(focused);
  paint::draw_address_map(focused_painter, scene, kArea, {.step = 3});
  const cv::Rect strip = rect(l.strip);
  EXPECT_GT(count(focused, strip, paint::shade(role_colour(Role::activation), 0.4)), 0);
  EXPECT_EQ(count(focused, strip, kLargestHole), 0);
  EXPECT_EQ(count(image, strip, paint::shade(role_colour(Role::activation), 0.4)), 0) << "not parked at the peak";
}

// At 1280×720 and 1920×1080, and in a half of two runs compared at
// 1920×1080, every word of the three pictures lies inside the view that
// draws it: each picture laid out in its view's canvas as
// the window places it (ui/layout.h's rectangle less ImGui's title bar, its
// padding and the row of widgets some views put above the canvas), with
// the window font's measures. Text bounds against panel bounds, not pixels.
TEST(Paint, EveryWordOfThePicturesFitsItsView) {
  static const TimelineScene timeline = timeline_scene();
  static const AddressMapScene map = address_map_scene_with_parking();
  static const MemoryLoadScene load = memory_load_scene();
  constexpr float kTitleBar = 19, kPadding = 8, kWidgetRow = 23;  // ImGui's default style with its 13 px font
  struct View {
    const char* name;
    ui::ViewId id;
    float widgets;  // the row above the canvas: "follow newest", the search box
    std::function<void(paint::Painter&, const Box&)> draw;
  };
  const View views[] = {
      {"timeline", ui::ViewId::timeline, kWidgetRow, [](paint::Painter& p, const Box& a) { paint::draw_timeline(p, timeline, a); }},
      {"address map", ui::ViewId::address_map, kWidgetRow,
       [](paint::Painter& p, const Box& a) { paint::draw_address_map(p, map, a); }},
      {"memory load", ui::ViewId::memory_load, 0, [](paint::Painter& p, const Box& a) { paint::draw_memory_load(p, load, a); }},
  };
  // (0 x 0: one run's half of two compared at 1920×1080, `tidepool view A B`.)
  for (const auto& [width, height] : {std::pair{1280.0f, 720.0f}, std::pair{1920.0f, 1080.0f}, std::pair{0.0f, 0.0f}}) {
    const ui::Layout layout = width > 0 ? ui::layout_for(width, height, kTitleBar)
                                        : ui::layout_in({0, kTitleBar, 1920, (1080 - kTitleBar) / 2});
    for (const View& v : views) {
      SCOPED_TRACE(std::string(v.name) + " at " +
                   (width > 0 ? std::to_string(static_cast<int>(width)) + "x" + std::to_string(static_cast<int>(height))
                              : std::string("half of 1920x1080")));
      const ui::Rect& r = layout[v.id];
      const Box area{r.x + kPadding, r.y + kTitleBar + kPadding + v.widgets, r.x + r.w - kPadding, r.y + r.h - kPadding};
      RecordingPainter painter(window_font);
      v.draw(painter, area);
      int words = 0;
      for (const Call& c : painter.calls) {
        if (c.kind != Call::Kind::text) continue;
        ++words;
        const Point size = window_font(c.text, c.size);
        const Point at = paint::aligned_top_left(c.points[0], size, c.h, c.v);
        EXPECT_GE(at.x, area.x0 - 0.5f) << "'" << c.text << "' starts left of the view";
        EXPECT_LE(at.x + size.x, area.x1 + 0.5f) << "'" << c.text << "' runs past the view's right edge";
        EXPECT_GE(at.y, area.y0 - 0.5f) << "'" << c.text << "' starts above the view";
        EXPECT_LE(at.y + size.y, area.y1 + 0.5f) << "'" << c.text << "' runs below the view";
      }
      EXPECT_GT(words, 5) << "nothing written: the test shows nothing";
    }
  }
}

// A title too wide for its picture goes onto more lines, broken between
// its parts, rather than losing its end: in a picture 400 pixels wide
// every part of the address map's title is there, and every line fits.
TEST(Paint, ATitleTooWideForThePictureWrapsBetweenItsParts) {
  const ui::AddressMapScene scene = testing::address_map_scene();
  const Box narrow{0, 0, 400, kHeight};
  RecordingPainter painter(window_font);
  paint::draw_address_map(painter, scene, narrow);
  std::string shown;
  int lines = 0;
  for (const Call& c : painter.calls) {
    if (c.kind != Call::Kind::text || c.size != TextSize::title) continue;
    EXPECT_LE(c.points[0].x + window_font(c.text, c.size).x, narrow.x1 - paint::kMargin) << c.text;
    EXPECT_EQ(c.text.find(".."), std::string::npos) << c.text;
    shown += c.text + "\n";
    ++lines;
  }
  EXPECT_GT(lines, 1);
  for (const char* part : {"Address map: iteration", "peak load", "footprint", "ratio", "pool"})
    EXPECT_NE(shown.find(part), std::string::npos) << part << " is missing from\n" << shown;
  const paint::AddressMapLayout wrapped = paint::address_map_layout(painter, scene, narrow);
  EXPECT_GT(wrapped.plot.y0, paint::address_map_layout(painter, scene, kArea).plot.y0) << "the plot makes room";
}

// The names right of the strip never print over each other: here the
// footprint (a hair above the largest free block's middle) and the pool
// (a hair above the footprint) all want the same few pixels.
TEST(Paint, AddressMapSideLabelsDoNotOverlap) {
  ui::AddressMapScene scene = testing::address_map_scene();
  const MapHole& hole = *scene.largest_free_at_peak;
  scene.footprint_bytes = hole.offset + hole.bytes / 2 + 4 * 1024;
  scene.pool_bytes = scene.footprint_bytes + 4 * 1024;
  RecordingPainter painter(window_font);
  paint::draw_address_map(painter, scene, kArea);
  const paint::AddressMapLayout l = paint::address_map_layout(painter, scene, kArea);
  struct Span {
    float top, bottom;
    std::string text;
  };
  std::vector<Span> side;
  for (const Call& c : painter.calls) {
    if (c.kind != Call::Kind::text || c.points[0].x <= l.strip.x1) continue;
    const float h = window_font(c.text, c.size).y;
    const float top = c.v == VAlign::top ? c.points[0].y : c.v == VAlign::bottom ? c.points[0].y - h : c.points[0].y - h / 2;
    side.push_back({top, top + h, c.text});
  }
  ASSERT_EQ(side.size(), 4u) << "pool, footprint, and the largest free block's two lines";
  for (std::size_t i = 0; i < side.size(); ++i)
    for (std::size_t j = i + 1; j < side.size(); ++j)
      EXPECT_TRUE(side[i].bottom <= side[j].top || side[j].bottom <= side[i].top)
          << "'" << side[i].text << "' and '" << side[j].text << "'";
}

// Nor over the strip's heading ("at peak", wider than the strip): a pool
// that is the footprint is named on two lines above its line, which sits
// near the plot's top.
TEST(Paint, AddressMapSideLabelsStayBelowTheStripsHeading) {
  ui::AddressMapScene scene = testing::address_map_scene();
  scene.pool_bytes = scene.footprint_bytes;
  RecordingPainter painter(window_font);
  paint::draw_address_map(painter, scene, kArea);
  const paint::AddressMapLayout l = paint::address_map_layout(painter, scene, kArea);
  int side = 0, headings = 0;
  for (const Call& c : painter.calls) {
    if (c.kind != Call::Kind::text) continue;
    if (c.text == "at peak") ++headings;
    if (c.points[0].x <= l.strip.x1) continue;
    EXPECT_GE(c.points[0].y, l.strip.y0 - 2.5f) << "'" << c.text << "' is beside the strip's heading";
    ++side;
  }
  EXPECT_EQ(headings, 1);
  EXPECT_GE(side, 2) << "'pool = footprint' and its bytes";
}

// Labels that all want the bottom of the plot (a largest free block at the
// pool's start, the footprint just above it) stay above the step axis.
TEST(Paint, AddressMapSideLabelsStayAboveTheStepAxis) {
  ui::AddressMapScene scene = testing::address_map_scene();
  scene.largest_free_at_peak = MapHole{0, 4 * 1024};
  scene.footprint_bytes = 8 * 1024;
  scene.pool_bytes = 12 * 1024;
  RecordingPainter painter(window_font);
  paint::draw_address_map(painter, scene, kArea);
  const paint::AddressMapLayout l = paint::address_map_layout(painter, scene, kArea);
  int side = 0;
  for (const Call& c : painter.calls) {
    if (c.kind != Call::Kind::text || c.points[0].x <= l.strip.x1) continue;
    EXPECT_LE(c.points[0].y + window_font(c.text, c.size).y, l.plot.y1 + 0.5f) << c.text;
    ++side;
  }
  EXPECT_EQ(side, 4);
}

TEST(Paint, TimelineZoomedInKeepsSpansInThePlotAndOutlinesTheHoveredOne) {
  const TimelineScene scene = timeline_scene();
  cv::Mat image = blank();
  paint::OpenCvPainter painter(image);
  // The window zoomed on the stall and the pointer on the backward span.
  const paint::TimelineFocus focus{.start_us = 1200, .end_us = 1700, .hovered = &scene.spans[4]};
  paint::draw_timeline(painter, scene, kArea, focus);
  const paint::TimelineLayout l = paint::timeline_layout(painter, scene, kArea, focus);
  const cv::Rect compute = rect(l.lane(Stream::compute));
  const cv::Rect left_of_plot(0, compute.y, compute.x, compute.height);
  // The forward span ended before the window opens: nowhere, not even left
  // of the plot where the lane names are.
  EXPECT_EQ(count(image, left_of_plot, span_colour(SpanKind::forward)), 0);
  EXPECT_EQ(count(image, compute, span_colour(SpanKind::forward)), 0);
  // The stall fills the first 200 us of 500, the backward the rest.
  EXPECT_GT(count(image, cv::Rect(compute.x, compute.y, compute.width * 2 / 5, compute.height), span_colour(SpanKind::wait)),
            0);
  const cv::Rect backward = rect(l.span_box(scene.spans[4])) & rect(l.plot);
  EXPECT_GT(count(image, backward, span_colour(SpanKind::backward)), backward.area() / 2);
  EXPECT_GT(count(image, compute, paint::kHighlight), backward.width) << "the hovered span's outline";
}

// The window's search outlines the blocks whose names hold it, and a pinned
// block gets a bolder outline.
TEST(Paint, AddressMapOutlinesWhatTheSearchFindsAndThePinnedBlock) {
  const AddressMapScene scene = testing::address_map_scene();
  auto highlighted = [&](const paint::AddressMapFocus& focus) {
    cv::Mat image = blank();
    paint::OpenCvPainter painter(image);
    paint::draw_address_map(painter, scene, kArea, focus);
    const paint::AddressMapLayout l = paint::address_map_layout(painter, scene, kArea);
    return count(image, rect(l.plot), paint::kHighlight);
  };
  EXPECT_EQ(highlighted({}), 0);
  EXPECT_EQ(highlighted({.search = "no such tensor"}), 0);
  const int found = highlighted({.search = "gradient"});
  EXPECT_GT(found, 0);
  EXPECT_GT(highlighted({.pinned = &scene.blocks[2]}), 0);
  EXPECT_GT(highlighted({.search = "a"}), found) << "more names hold an a";
}

// Hovering an offload outlines its prefetch too (the same tensor brought
// back), joined to it; hovering the forward span outlines nothing else.
TEST(Paint, TimelineHoveringAnOffloadOutlinesItsPrefetch) {
  const TimelineScene scene = timeline_scene();
  auto highlighted_in_prefetch_lane = [&](const TimelineSpan& hovered) {
    cv::Mat image = blank();
    paint::OpenCvPainter painter(image);
    const paint::TimelineFocus focus{.hovered = &hovered};
    paint::draw_timeline(painter, scene, kArea, focus);
    const paint::TimelineLayout l = paint::timeline_layout(painter, scene, kArea, focus);
    const Box lane = l.lane(Stream::prefetch);
    return count(image, rect({lane.x0, lane.y0 - 3, lane.x1, lane.y1 + 3}), paint::kHighlight);
  };
  const paint::TimelineLayout l = paint::timeline_layout(*std::make_unique<RecordingPainter>(opencv_font()), scene, kArea, {});
  const float prefetch_width = l.span_box(scene.spans[2]).width();
  EXPECT_GT(highlighted_in_prefetch_lane(scene.spans[1]), prefetch_width) << "the offload's prefetch, outlined";
  EXPECT_EQ(highlighted_in_prefetch_lane(scene.spans[0]), 0) << "a forward span has no round trip";
}

// ---- the OpenCV painter's promises ------------------------------------------

TEST(Paint, OpenCvPainterSnapsBlendsClipsAndAligns) {
  cv::Mat image(40, 60, CV_8UC3, cv::Scalar(0, 0, 0));
  paint::OpenCvPainter p(image);
  // Edges to the nearest pixel boundary; a sliver is one pixel.
  p.fill_rect({2.4f, 2.6f, 5.6f, 4.4f}, 0xFF0000);
  EXPECT_EQ(count(image, cv::Rect(0, 0, 60, 40), 0xFF0000), 4 * 1);
  EXPECT_EQ(count(image, cv::Rect(2, 3, 4, 1), 0xFF0000), 4);
  p.fill_rect({10.2f, 0, 10.3f, 10}, 0x00FF00);
  EXPECT_EQ(count(image, cv::Rect(0, 0, 60, 40), 0x00FF00), 10);
  // Half opaque over black: half the colour.
  p.fill_rect({20, 0, 30, 10}, {0x0000FF, 0.5f});
  EXPECT_NEAR(image.at<cv::Vec3b>(5, 25)[0], 128, 1);
  // An outline stays inside its box.
  p.outline_rect({40, 10, 50, 20}, 0xFFFFFF, 2);
  EXPECT_EQ(count(image, cv::Rect(40, 10, 10, 10), 0xFFFFFF), 10 * 10 - 6 * 6);
  EXPECT_EQ(count(image, cv::Rect(0, 0, 60, 40), 0xFFFFFF), 10 * 10 - 6 * 6);
  // A clip cuts what is drawn, until popped.
  p.push_clip({0, 30, 10, 40});
  p.fill_rect({0, 20, 60, 40}, 0xFFFF00);
  p.pop_clip();
  EXPECT_EQ(count(image, cv::Rect(0, 0, 60, 40), 0xFFFF00), 10 * 10);
  p.line({0, 25}, {59, 25}, 0xFF00FF);
  EXPECT_EQ(count(image, cv::Rect(0, 25, 60, 1), 0xFF00FF), 60) << "not anti-aliased";

  // Right- and bottom-aligned text ends at its anchor.
  cv::Mat page(60, 200, CV_8UC3, cv::Scalar(0, 0, 0));
  paint::OpenCvPainter writer(page);
  const Point size = writer.text_size("Ag", TextSize::label);
  EXPECT_GT(size.x, 10);
  EXPECT_GT(size.y, 10);
  writer.text({100, 40}, "Ag", 0xFFFFFF, TextSize::label, HAlign::right, VAlign::bottom);
  cv::Mat lit;
  cv::extractChannel(page, lit, 0);
  const cv::Rect drawn = cv::boundingRect(lit);
  EXPECT_LE(drawn.x + drawn.width, 101);
  EXPECT_GE(drawn.x, 100 - static_cast<int>(size.x) - 1);
  EXPECT_LE(drawn.y + drawn.height, 41);
  EXPECT_GE(drawn.y, 40 - static_cast<int>(size.y) - 1);
}

// A map of more blocks than a pixel column can tell apart (a 10^6-event
// snapshot's): the blocks narrower than a pixel are merged per column, so a
// frame asks for a few thousand rectangles, and the pixels stay the
// blocks': each block's middle in its column has its colour, and the free
// half of its slot above it does not.
TEST(Paint, AnAddressMapOfManyThinBlocksMergesThemPerColumnOntoTheSamePixels) {
  AddressMapScene scene;
  scene.iteration = 0;
  const int blocks = 30000, slots = 4;
  const std::size_t slot = std::size_t{1} << 18;
  scene.steps = 2 * blocks;
  scene.pool_bytes = slots * slot;
  scene.footprint_bytes = scene.pool_bytes;
  scene.after_step.assign(static_cast<std::size_t>(scene.steps), StepPool{});
  for (int i = 0; i < blocks; ++i) {
    MapBlock b;
    b.tensor = i;
    b.offset = static_cast<std::size_t>(i % slots) * slot;
    b.bytes = slot / 2;  // the slot's upper half stays free
    b.first_step = b.last_step = 2 * i;
    scene.blocks.push_back(b);
  }
  cv::Mat image = blank();
  paint::OpenCvPainter painter(image);
  RecordingPainter recording(window_font, &painter);
  paint::draw_address_map(recording, scene, kArea);
  std::size_t fills = 0;
  for (const Call& c : recording.calls) fills += c.kind == Call::Kind::fill;
  EXPECT_LT(fills, static_cast<std::size_t>(blocks) / 4);

  const paint::AddressMapLayout l = paint::address_map_layout(recording, scene, kArea);
  const int peak_column = static_cast<int>(std::round(l.x(scene.peak_step)));
  int checked = 0;
  for (const MapBlock& b : scene.blocks) {
    const int x = static_cast<int>(std::round(l.life_box(b).x0));
    if (std::abs(x - peak_column) <= 1) continue;  // the peak's holes are drawn over it
    if (x + 1 > l.plot.x1) continue;               // the plot's edge is drawn over the last column
    const int taken = l.y.px(static_cast<double>(b.offset + b.bytes / 2));
    const int free = l.y.px(static_cast<double>(b.offset + b.bytes + b.bytes / 2));
    EXPECT_EQ(count(image, cv::Rect(x, taken, 1, 1), role_colour(b.role)), 1) << "block " << b.tensor;
    EXPECT_EQ(count(image, cv::Rect(x, free, 1, 1), role_colour(b.role)), 0) << "above block " << b.tensor;
    ++checked;
  }
  EXPECT_GT(checked, blocks - 400);
}


// Load curves of more samples than pixel columns (a 10^6-event snapshot's):
// each column is drawn as its envelope, a few points per column, and the
// curve still reaches every column's highest and lowest load.
TEST(Paint, LoadCurvesOfManySamplesAreDrawnAsEachColumnsEnvelope) {
  MemoryLoadScene scene;
  scene.computes_values = false;
  const std::size_t samples = 100000, high = std::size_t{64} << 20, low = std::size_t{4} << 20;
  for (std::size_t i = 0; i < samples; ++i) {
    const std::size_t load = i % 2 ? high : low;  // every column holds both
    scene.points.push_back({0, static_cast<int>(i), static_cast<double>(i), load, high});
  }
  scene.peak_load_bytes = scene.max_extent_bytes = high;
  scene.peak_index = 1;
  cv::Mat image = blank();
  paint::OpenCvPainter painter(image);
  RecordingPainter recording(window_font, &painter);
  paint::draw_memory_load(recording, scene, kArea);
  const paint::MemoryLoadLayout l = paint::memory_load_layout(recording, scene, kArea);
  const Call* load_curve = nullptr;
  for (const Call& c : recording.calls)
    if (c.kind == Call::Kind::polyline && c.colour.rgb == kLoad) load_curve = &c;
  ASSERT_NE(load_curve, nullptr);
  EXPECT_LE(load_curve->points.size(), 4 * static_cast<std::size_t>(l.curves.width() + 8));
  // A column in the middle: the load curve goes down to the low value and
  // up to the high one there.
  const float x = std::round((l.curves.x0 + l.curves.x1) / 2);
  bool reaches_low = false, reaches_high = false;
  for (const Point& pt : load_curve->points) {
    if (pt.x != x) continue;
    reaches_low |= pt.y == static_cast<float>(l.y.px(static_cast<double>(low)));
    reaches_high |= pt.y == static_cast<float>(l.y.px(static_cast<double>(high)));
  }
  EXPECT_TRUE(reaches_low);
  EXPECT_TRUE(reaches_high);
}


// ---- what the views keep between frames -------------------------------------

// Where two call lists first differ ("" where they are the same): every
// call's kind, boxes, points, colour, thickness and text.
std::string first_difference(const std::vector<Call>& a, const std::vector<Call>& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const Call &x = a[i], &y = b[i];
    bool same = x.kind == y.kind && x.box == y.box && x.colour.rgb == y.colour.rgb && x.colour.alpha == y.colour.alpha &&
                x.thickness == y.thickness && x.text == y.text && x.size == y.size && x.h == y.h && x.v == y.v &&
                x.points.size() == y.points.size();
    for (std::size_t k = 0; same && k < x.points.size(); ++k)
      same = x.points[k].x == y.points[k].x && x.points[k].y == y.points[k].y;
    if (!same)
      return "call " + std::to_string(i) + " of " + std::to_string(a.size()) + ": kind " +
             std::to_string(static_cast<int>(x.kind)) + " box " + std::to_string(x.box.x0) + "," + std::to_string(x.box.y0) +
             " against kind " + std::to_string(static_cast<int>(y.kind)) + " box " + std::to_string(y.box.x0) + "," +
             std::to_string(y.box.y0);
  }
  if (a.size() != b.size()) return std::to_string(a.size()) + " calls against " + std::to_string(b.size());
  return "";
}

// The window keeps what the address map works out from every block (the
// merged columns past 20 000 blocks, the highest address, the strip's
// pool, the search's blocks) between frames. Drawn with that cache, a big
// map is call for call what it is drawn afresh, frame after frame, as the
// view is resized, the strip follows the pointer, a search and a pin come
// and go, a comparison's axes grow, the map is built again into the same
// object, and a copy of it is drawn: a cache kept past any of these would
// draw the picture before it.
TEST(Paint, AnAddressMapDrawnWithTheViewsCacheIsTheOneDrawnAfresh) {
  AddressMapScene scene = big_address_map_scene();
  ASSERT_GT(scene.blocks.size(), 20000u) << "past the merge";
  paint::AddressMapCache cache;
  int drawn = 0;
  auto same = [&](const AddressMapScene& map, const Box& area, const paint::AddressMapFocus& focus) {
    SCOPED_TRACE("draw " + std::to_string(++drawn));
    RecordingPainter cached(window_font), fresh(window_font);
    paint::draw_address_map(cached, map, area, focus, &cache);
    paint::draw_address_map(fresh, map, area, focus);
    EXPECT_GT(fresh.calls.size(), 100u);
    EXPECT_EQ(first_difference(cached.calls, fresh.calls), "");
    return fresh.calls;
  };
  const Box wide{0, 0, 1000, 420}, narrow{10, 20, 700, 380};
  const std::vector<Call> first = same(scene, wide, {});
  EXPECT_EQ(first_difference(first, same(scene, wide, {})), "") << "a frame like the one before";
  EXPECT_NE(first_difference(first, same(scene, narrow, {})), "") << "resized";
  same(scene, wide, {.step = 1234});
  same(scene, wide, {.step = 4321});
  same(scene, wide, {.step = 4321, .search = "conv", .pinned = &scene.blocks[97 + 4]});
  same(scene, wide, {.step = 4321, .search = "CONV1"});
  same(scene, narrow, {.search = ""});
  scene.axis_bytes = 2 * paint::address_map_own_top(scene);  // compared with a run that needs more
  scene.axis_steps = 3 * scene.steps;
  same(scene, narrow, {});
  // Built again into the same object: the blocks (in the same storage) move.
  scene.generation = 2;
  for (MapBlock& b : scene.blocks) b.offset += 64 * testing::KiB;
  scene.blocks.back().bytes *= 64;  // and reach higher
  same(scene, narrow, {.step = 4321, .search = "conv"});
  const AddressMapScene copy = scene;  // same generation, its own blocks
  same(copy, narrow, {.step = 4321, .search = "conv", .pinned = &copy.blocks[97 + 4]});
}

// The memory load keeps each column's envelope (first, least, most, last)
// of a million samples, the area under the load, the highest bytes and
// the iterations' first samples: drawn with that cache the curves are
// call for call what they are drawn afresh, as the view is resized, the
// pointer moves, a comparison's axes grow and the curves are built again.
TEST(Paint, LoadCurvesDrawnWithTheViewsCacheAreTheOnesDrawnAfresh) {
  MemoryLoadScene scene = big_memory_load_scene();
  paint::MemoryLoadCache cache;
  int drawn = 0;
  auto same = [&](const MemoryLoadScene& load, const Box& area, int sample) {
    SCOPED_TRACE("draw " + std::to_string(++drawn));
    RecordingPainter cached(window_font), fresh(window_font);
    paint::draw_memory_load(cached, load, area, {sample}, &cache);
    paint::draw_memory_load(fresh, load, area, {sample});
    EXPECT_EQ(first_difference(cached.calls, fresh.calls), "");
    return fresh.calls;
  };
  const Box wide{0, 0, 1000, 420}, narrow{10, 20, 600, 400};
  const std::vector<Call> first = same(scene, wide, -1);
  EXPECT_EQ(first_difference(first, same(scene, wide, -1)), "");
  EXPECT_NE(first_difference(first, same(scene, narrow, -1)), "") << "resized";
  same(scene, narrow, 777);
  scene.axis_bytes = 3 * paint::memory_load_own_top(scene);
  scene.axis_samples = 2 * scene.points.size();
  same(scene, narrow, 777);
  // Built again into the same object: the samples (in the same storage) change.
  scene.generation = 2;
  for (LoadPoint& p : scene.points) {
    p.load_bytes /= 2;
    p.iteration += 1;
  }
  scene.points.back().extent_bytes *= 8;  // and reach higher
  same(scene, narrow, 777);
  const MemoryLoadScene copy = scene;
  same(copy, narrow, -1);
}

// The pointer's block, found through the steps the blocks span, is the
// one a pass over every block finds (the last drawn whose life or parked
// box holds the point): over the plot of a big map and of a small one,
// wide and narrow, and on the edges of the long and the parked blocks.
TEST(Paint, TheBlockUnderThePointerIsTheOneAPassOverEveryBlockFinds) {
  for (const AddressMapScene& scene : {big_address_map_scene(), big_address_map_scene(300)}) {
    paint::AddressMapCache cache;
    for (const Box& area : {Box{0, 0, 1000, 420}, Box{0, 0, 300, 200}}) {
      const paint::AddressMapLayout l = paint::address_map_layout(RecordingPainter(window_font), scene, area, &cache);
      std::vector<Point> points;
      for (float y = l.plot.y0; y < l.plot.y1; y += 17)
        for (float x = l.plot.x0; x < l.plot.x1; x += 4.75f) points.push_back({x, y});
      for (std::size_t i = 0; i < scene.blocks.size(); i += 97) {
        for (const Box& b : {l.life_box(scene.blocks[i]), l.parked_box(scene.blocks[i])}) {
          const float y = (b.y0 + b.y1) / 2;
          for (float x : {b.x0, std::nextafter(b.x0, -1e9f), b.x1, std::nextafter(b.x1, -1e9f)}) points.push_back({x, y});
        }
      }
      int found = 0;
      for (const Point& at : points) {
        const MapBlock* every = nullptr;
        for (const MapBlock& b : scene.blocks)
          if (l.life_box(b).contains(at) || l.parked_box(b).contains(at)) every = &b;
        ASSERT_EQ(paint::block_at(l, scene, at, &cache), every) << "at " << at.x << "," << at.y;
        found += every != nullptr;
      }
      EXPECT_GT(found, 5) << "points on blocks";
    }
  }
}

}  // namespace
}  // namespace tidepool::ui
