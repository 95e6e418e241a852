#include "ui/png/memory_load_png.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

using png::HAlign;
using png::VAlign;

constexpr const char* kTitle = "Memory load";
constexpr int kLeftMargin = 84;
constexpr int kRightMargin = 130;  // the budget's label
constexpr int kAxisTitleRow = 22;
constexpr int kXAxisRoom = 48;   // tick labels and the axis title under a plot
constexpr int kPanelTitleRow = 26;
constexpr int kPanelLeft = 70, kPanelGap = 84, kPanelRight = 40;
// The training curves: colours of the palette's families that no memory
// curve uses, so a panel never reads as the load.
constexpr std::uint32_t kLossColour = 0xE8B04C;
constexpr std::uint32_t kAccuracyColour = 0x5CBF6A;
constexpr std::uint32_t kThroughputColour = 0xC678DD;
constexpr std::uint32_t kPeakMarker = 0xFFFFFF;

png::LegendEntries legend(const MemoryLoadScene& scene) {
  png::LegendEntries entries = {
      {"memory load (bytes of live tensors)", kLoad},
      {"pool extent (highest byte in use + 1)", kExtent},
      {"budget", kBudget},
  };
  if (scene.load_limit_bytes > 0) entries.push_back({"AutoSwap load limit", kLoadLimit});
  return entries;
}

std::string iteration_range(std::int64_t first, std::int64_t last) {
  return first == last ? "iteration " + std::to_string(first)
                       : "iterations " + std::to_string(first) + "-" + std::to_string(last);
}

std::string title_of(const MemoryLoadScene& scene) {
  std::string title = kTitle;
  if (!scene.points.empty()) {
    const LoadPoint& peak = scene.points[scene.peak_index];
    title += ": " + iteration_range(scene.points.front().iteration, scene.points.back().iteration) +
             "  |  peak " + format_bytes(scene.peak_load_bytes) + " (iteration " +
             std::to_string(peak.iteration) + ", step " + std::to_string(peak.step) + ")  |  highest extent " +
             format_bytes(scene.max_extent_bytes);
  } else if (!scene.iterations.empty()) {
    title += ": " + iteration_range(scene.iterations.front().iteration, scene.iterations.back().iteration);
  }
  if (scene.budget_bytes > 0) title += "  |  budget " + format_bytes(scene.budget_bytes);
  return title;
}

// A step curve: sample i holds its value from x(i) to x(i + 1).
std::vector<cv::Point> step_curve(const MemoryLoadLayout& l, const std::vector<LoadPoint>& points,
                                  const std::function<std::size_t(const LoadPoint&)>& value) {
  std::vector<cv::Point> curve;
  curve.reserve(2 * points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const int y = l.y.px(static_cast<double>(value(points[i])));
    curve.emplace_back(l.x.px(static_cast<double>(i)), y);
    curve.emplace_back(l.x.px(static_cast<double>(i + 1)), y);
  }
  return curve;
}

void draw_curves(cv::Mat& image, const MemoryLoadLayout& l, const MemoryLoadScene& scene) {
  const cv::Rect& plot = l.curves;
  png::fill_rect(image, plot.x, plot.y, plot.x + plot.width, plot.y + plot.height, png::kPlotBackground);
  const png::ByteUnit unit = png::byte_unit_for(l.y.d1);
  png::draw_y_axis(image, plot, l.y, png::nice_ticks_in(0, l.y.d1, std::max(2, plot.height / 55), unit.bytes),
                   unit.bytes, std::string("bytes (") + unit.name + ")");
  png::draw_x_axis(image, plot, l.x, {}, 1, "steps of the recent iterations, one sample after each", false);
  if (scene.points.empty()) {
    png::put_text(image, "no per-step samples", {plot.x + plot.width / 2, plot.y + plot.height / 2},
                  png::kLabelText, png::kDimText, HAlign::centre, VAlign::middle);
    return;
  }
  // Iteration boundaries, under the curves.
  for (std::size_t i = 0; i < scene.points.size(); ++i) {
    if (i > 0 && scene.points[i].iteration == scene.points[i - 1].iteration) continue;
    const int x = l.x.px(static_cast<double>(i));
    if (i > 0) png::dashed_line(image, {x, plot.y}, {x, plot.y + plot.height}, png::kAxis);
    png::put_text(image, "it " + std::to_string(scene.points[i].iteration), {x + 4, plot.y + 4}, png::kSmallText,
                  png::kDimText, HAlign::left, VAlign::top);
  }
  const auto load = step_curve(l, scene.points, [](const LoadPoint& p) { return p.load_bytes; });
  const auto extent = step_curve(l, scene.points, [](const LoadPoint& p) { return p.extent_bytes; });
  // The area under the load, faintly, so the load reads as what fills the pool.
  {
    std::vector<cv::Point> area = load;
    area.emplace_back(load.back().x, plot.y + plot.height);
    area.emplace_back(load.front().x, plot.y + plot.height);
    cv::Mat overlay = image.clone();
    cv::fillPoly(overlay, std::vector<std::vector<cv::Point>>{area}, png::bgr(kLoad), cv::LINE_8);
    const cv::Rect inside = plot & cv::Rect(0, 0, image.cols, image.rows);
    cv::Mat roi = image(inside), overlay_roi = overlay(inside);
    cv::addWeighted(overlay_roi, 0.18, roi, 0.82, 0, roi);
  }
  // Two pixels per line while the steps are wide enough to stay apart; one
  // when they crowd, or the curve becomes a smear. The extent goes on top:
  // it is never below the load, so it shows where they part.
  const int thickness = static_cast<double>(plot.width) >= 2.0 * scene.points.size() ? 2 : 1;
  cv::polylines(image, load, false, png::bgr(kLoad), thickness, cv::LINE_AA);
  cv::polylines(image, extent, false, png::bgr(kExtent), 1, cv::LINE_AA);

  // The peak's value beside it, on whichever side has room, on a patch of
  // background so the curves under it do not garble it.
  const double index = static_cast<double>(std::min(scene.peak_index, scene.points.size() - 1)) + 0.5;
  const cv::Point peak(l.x.px(index), l.y.px(static_cast<double>(scene.peak_load_bytes)));
  const std::string label = "peak " + format_bytes(scene.peak_load_bytes);
  const cv::Size size = png::text_size(label, png::kLabelText);
  const bool left = peak.x + 12 + size.width > plot.x + plot.width;
  // Centred on the marker, kept inside the plot.
  const int baseline = std::max(plot.y + size.height + 3, std::min(peak.y + size.height / 2, plot.y + plot.height - 4));
  const cv::Point at(left ? peak.x - 12 - size.width : peak.x + 12, baseline);
  png::fill_rect(image, at.x - 3, at.y - size.height - 3, at.x + size.width + 3, at.y + 4, png::kPlotBackground);
  png::put_text(image, label, at, png::kLabelText, kPeakMarker);
  // The budget over everything but the marker: the line the load must stay under.
  if (scene.budget_bytes > 0) {
    const int y = l.y.px(static_cast<double>(scene.budget_bytes));
    cv::line(image, {plot.x, y}, {plot.x + plot.width, y}, png::bgr(kBudget), 2, cv::LINE_8);
    png::put_text(image, "budget " + format_bytes(scene.budget_bytes), {plot.x + plot.width + 6, y},
                  png::kSmallText, kBudget, HAlign::left, VAlign::middle);
  }
  if (scene.load_limit_bytes > 0) {  // AutoSwap offloads what keeps the load under this
    const int y = l.y.px(static_cast<double>(scene.load_limit_bytes));
    cv::line(image, {plot.x, y}, {plot.x + plot.width, y}, png::bgr(kLoadLimit), 1, cv::LINE_8);
    png::put_text(image, "AutoSwap load limit " + format_bytes(scene.load_limit_bytes), {plot.x + 6, y + 4},
                  png::kSmallText, kLoadLimit, HAlign::left, VAlign::top);
  }
  cv::circle(image, peak, 5, png::bgr(kPeakMarker), 2, cv::LINE_AA);
}

struct Series {
  std::vector<double> values;
  std::uint32_t colour;
};

// One small multiple: the series against the iteration number, with its
// own value axis.
// The title is in parts, each in the colour of the series it names.
void draw_panel(cv::Mat& image, const cv::Rect& panel, const png::LegendEntries& title,
                const std::vector<std::int64_t>& iterations, const std::vector<Series>& series, double lo, double hi,
                double unit_divisor) {
  png::fill_rect(image, panel.x, panel.y, panel.x + panel.width, panel.y + panel.height, png::kPlotBackground);
  int title_x = panel.x;
  for (const auto& [text, colour] : title) {
    png::put_text(image, text, {title_x, panel.y - kPanelTitleRow + 2}, png::kSmallText, colour, HAlign::left,
                  VAlign::top);
    title_x += png::text_size(text, png::kSmallText).width;
  }
  double first = iterations.empty() ? 0 : static_cast<double>(iterations.front());
  double last = iterations.empty() ? 1 : static_cast<double>(iterations.back());
  if (last <= first) {  // one iteration: centre it
    first -= 0.5;
    last += 0.5;
  }
  if (hi <= lo) hi = lo + 1;
  const png::LinearScale x{first, last, static_cast<double>(panel.x + 4),
                           static_cast<double>(panel.x + panel.width - 4)};
  const png::LinearScale y{lo, hi, static_cast<double>(panel.y + panel.height), static_cast<double>(panel.y)};
  std::vector<double> x_ticks;
  for (double t : png::nice_ticks(first, last, std::max(2, panel.width / 70)))
    if (std::abs(t - std::round(t)) < 1e-9) x_ticks.push_back(t);  // iterations are whole numbers
  png::draw_y_axis(image, panel, y, png::nice_ticks_in(lo, hi, std::max(2, panel.height / 40), unit_divisor),
                   unit_divisor, "");
  png::draw_x_axis(image, panel, x, x_ticks, 1, "iteration");
  if (iterations.empty()) {
    png::put_text(image, "no finished iterations", {panel.x + panel.width / 2, panel.y + panel.height / 2},
                  png::kSmallText, png::kDimText, HAlign::centre, VAlign::middle);
    return;
  }
  for (const Series& s : series) {
    std::vector<cv::Point> line;
    line.reserve(s.values.size());
    for (std::size_t i = 0; i < s.values.size(); ++i)
      line.emplace_back(x.px(static_cast<double>(iterations[i])), y.px(s.values[i]));
    cv::polylines(image, line, false, png::bgr(s.colour), 2, cv::LINE_AA);
    if (line.size() <= 40)  // dots while they stay apart
      for (const cv::Point& p : line) cv::circle(image, p, 3, png::bgr(s.colour), cv::FILLED, cv::LINE_AA);
  }
}

void draw_iterations(cv::Mat& image, const MemoryLoadLayout& l, const MemoryLoadScene& scene) {
  std::vector<std::int64_t> its;
  Series peak{{}, kLoad}, footprint{{}, kExtent}, loss{{}, kLossColour}, accuracy{{}, kAccuracyColour},
      throughput{{}, kThroughputColour};
  double max_bytes = 1, max_loss = 0, max_throughput = 0;
  for (const IterationPoint& p : scene.iterations) {
    its.push_back(p.iteration);
    peak.values.push_back(static_cast<double>(p.peak_load_bytes));
    footprint.values.push_back(static_cast<double>(p.footprint_bytes));
    loss.values.push_back(p.loss);
    accuracy.values.push_back(100.0 * p.accuracy);
    throughput.values.push_back(p.images_per_second);
    max_bytes = std::max({max_bytes, static_cast<double>(p.peak_load_bytes), static_cast<double>(p.footprint_bytes)});
    max_loss = std::max(max_loss, static_cast<double>(p.loss));
    max_throughput = std::max(max_throughput, p.images_per_second);
  }
  const png::ByteUnit unit = png::byte_unit_for(max_bytes);
  draw_panel(image, l.panels[0],
             {{"peak load", kLoad}, {" / ", png::kText}, {"footprint", kExtent},
              {std::string(" (") + unit.name + ")", png::kText}},
             its, {footprint, peak}, 0, max_bytes * 1.1, unit.bytes);
  draw_panel(image, l.panels[1], {{"loss", kLossColour}}, its, {loss}, 0, max_loss * 1.1, 1);
  draw_panel(image, l.panels[2], {{"accuracy (%)", kAccuracyColour}}, its, {accuracy}, 0, 100, 1);
  draw_panel(image, l.panels[3], {{"images / s", kThroughputColour}}, its, {throughput}, 0, max_throughput * 1.1, 1);
}

}  // namespace

MemoryLoadLayout memory_load_layout(const MemoryLoadScene& scene, int width, int height) {
  MemoryLoadLayout l;
  const int top = png::title_bottom() + png::legend_room(width, height, legend(scene)) + 6 + kAxisTitleRow;
  const int curves_height = std::max(40, static_cast<int>((height - top) * 0.56) - kXAxisRoom);
  // A narrow picture keeps most of its width for the curves.
  const int right_margin = std::min(kRightMargin, width / 5);
  l.curves = cv::Rect(kLeftMargin, top, std::max(1, width - kLeftMargin - right_margin), curves_height);
  const double samples = std::max<double>(1, static_cast<double>(scene.points.size()));
  l.x = {0, samples, static_cast<double>(l.curves.x), static_cast<double>(l.curves.x + l.curves.width)};
  std::size_t highest = std::max({scene.budget_bytes, scene.max_extent_bytes, scene.peak_load_bytes});
  for (const LoadPoint& p : scene.points) highest = std::max({highest, p.load_bytes, p.extent_bytes});
  // 8% headroom, for the peak's label.
  l.y = {0, std::max<double>(1, static_cast<double>(highest)) * 1.08,
         static_cast<double>(l.curves.y + l.curves.height), static_cast<double>(l.curves.y)};

  const int panel_top = l.curves.y + l.curves.height + kXAxisRoom + kPanelTitleRow;
  const int panel_height = std::max(30, height - panel_top - kXAxisRoom);
  const int panel_width = std::max(20, (width - kPanelLeft - kPanelRight - 3 * kPanelGap) / 4);
  for (int i = 0; i < 4; ++i)
    l.panels[i] = cv::Rect(kPanelLeft + i * (panel_width + kPanelGap), panel_top, panel_width, panel_height);
  return l;
}

cv::Mat draw_memory_load(const MemoryLoadScene& scene, int width, int height) {
  cv::Mat image = png::new_canvas(width, height);
  if (scene.empty()) {
    png::draw_no_events(image, kTitle);
    return image;
  }
  const MemoryLoadLayout l = memory_load_layout(scene, width, height);
  png::draw_title(image, title_of(scene));
  png::draw_legend_below_title(image, legend(scene));
  draw_curves(image, l, scene);
  draw_iterations(image, l, scene);
  return image;
}

}  // namespace tidepool::ui
