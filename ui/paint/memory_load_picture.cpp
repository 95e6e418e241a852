// Where the window and the PNG used to differ: the curves are the PNG's
// (steps: a sample holds until the next, over a faint area under the load;
// dashed iteration boundaries with their numbers; round byte ticks); the
// budget is named inside the plot as the window did, since a narrow view has
// no margin for it; the peak is the window's white dot with the PNG's label;
// the per-iteration figures are the PNG's panels, which replace the
// window's five ImGui::PlotLines.
#include "ui/paint/memory_load_picture.h"
#include "ui/scene/iteration_number.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ui/scene/colours.h"
#include "ui/session_link.h"  // kNoNumbers

namespace tidepool::ui::paint {
namespace {

constexpr const char* kTitle = "Memory load";
constexpr float kRightMargin = 24;
constexpr float kWidePicture = 1000;  // from here the four panels go in one row
// The training curves: colours of the palette's families that no memory
// curve uses, so a panel never reads as the load.
constexpr std::uint32_t kLossColour = 0xE8B04C;
constexpr std::uint32_t kAccuracyColour = 0x5CBF6A;
constexpr std::uint32_t kThroughputColour = 0xC678DD;
constexpr std::uint32_t kPeakMarker = 0xFFFFFF;

LegendEntries legend(const MemoryLoadScene& scene) {
  LegendEntries entries = {
      {"memory load (bytes of live tensors)", kLoad},
      {"pool extent (highest byte in use + 1)", kExtent},
      {"budget", kBudget},
  };
  if (scene.load_limit_bytes > 0) entries.push_back({"AutoSwap load limit", kLoadLimit});
  return entries;
}

std::string title_of(const MemoryLoadScene& scene) {
  std::string title = kTitle;
  if (!scene.points.empty()) {
    const LoadPoint& peak = scene.points[std::min(scene.peak_index, scene.points.size() - 1)];
    title += ": " + iterations_text(scene.points.front().iteration, scene.points.back().iteration) + "  |  peak " +
             format_bytes(scene.peak_load_bytes) + " (iteration " + std::to_string(shown_iteration(peak.iteration)) + ", step " +
             std::to_string(peak.step) + ")  |  highest extent " + format_bytes(scene.max_extent_bytes);
  } else if (!scene.iterations.empty()) {
    title += ": " + iterations_text(scene.iterations.front().iteration, scene.iterations.back().iteration);
  }
  if (scene.budget_bytes > 0) title += "  |  budget " + format_bytes(scene.budget_bytes);
  return title;
}

// Room for a value axis's tick labels left of a plot.
float value_labels_width(const Painter& p) { return p.text_size("0000.0", TextSize::small).x + 12; }
float panel_title_row(const Painter& p) { return line_height(p, TextSize::small) + 10; }
constexpr float kMinPanel = 20;   // a panel's least height
constexpr float kMinCurves = 80;  // the curves' least height beside the panels

// More samples than twice the pixel columns (a trace of 10^6 events): the
// curves are drawn per column, not per sample.
bool dense(const MemoryLoadLayout& l, std::size_t samples) {
  return samples > 2 * static_cast<std::size_t>(std::max(l.curves.width(), 1.0f));
}

// Calls fn(column, i, j) for each pixel column, left to right, with the
// samples [i, j) whose x(i) rounds to it; a few scale lookups per column,
// not per sample.
template <typename Fn>
void for_each_column(const LinearScale& x, std::size_t n, Fn fn) {
  for (std::size_t i = 0; i < n;) {
    const int column = x.px(static_cast<double>(i));
    const double guess = std::ceil(x.invert(column + 0.5));
    std::size_t j = static_cast<std::size_t>(std::clamp(guess, static_cast<double>(i + 1), static_cast<double>(n)));
    while (j < n && x.px(static_cast<double>(j)) == column) ++j;
    while (j > i + 1 && x.px(static_cast<double>(j - 1)) != column) --j;
    fn(column, i, j);
    i = j;
  }
}

// A step curve: sample i holds its value from x(i) to x(i + 1). Dense, each
// column gets four points instead: its first sample's value, the most and
// the least of its samples, and its last's, which cover the same pixels as
// every sample would, at a few thousand points instead of millions.
template <typename Value>
std::vector<Point> step_curve(const MemoryLoadLayout& l, const std::vector<LoadPoint>& points, Value value) {
  std::vector<Point> curve;
  auto y_of = [&](std::size_t v) { return static_cast<float>(l.y.px(static_cast<double>(v))); };
  const std::size_t n = points.size();
  if (!dense(l, n)) {
    curve.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      curve.push_back({static_cast<float>(l.x.px(static_cast<double>(i))), y_of(value(points[i]))});
      curve.push_back({static_cast<float>(l.x.px(static_cast<double>(i + 1))), y_of(value(points[i]))});
    }
    return curve;
  }
  for_each_column(l.x, n, [&](int column, std::size_t i, std::size_t j) {
    std::size_t least = value(points[i]), most = least;
    for (std::size_t k = i + 1; k < j; ++k) {
      least = std::min<std::size_t>(least, value(points[k]));
      most = std::max<std::size_t>(most, value(points[k]));
    }
    const float x = static_cast<float>(column);
    curve.push_back({x, y_of(value(points[i]))});
    curve.push_back({x, y_of(most)});
    curve.push_back({x, y_of(least)});
    curve.push_back({x + 1, y_of(value(points[j - 1]))});
  });
  return curve;
}

// The area under the load, faintly, so the load reads as what fills the
// pool. A sample narrower than a pixel is left to its neighbours, so no
// column is blended twice. Dense, a column's fill reaches the highest load
// of its samples.
std::vector<Box> load_area(const MemoryLoadLayout& l, const std::vector<LoadPoint>& points) {
  std::vector<Box> area;
  const Box& plot = l.curves;
  if (dense(l, points.size())) {
    for_each_column(l.x, points.size(), [&](int column, std::size_t i, std::size_t j) {
      std::size_t most = 0;
      for (std::size_t k = i; k < j; ++k) most = std::max(most, points[k].load_bytes);
      const float x = static_cast<float>(column);
      area.push_back({x, static_cast<float>(l.y.px(static_cast<double>(most))), x + 1, plot.y1});
    });
  } else {
    for (std::size_t i = 0; i < points.size(); ++i) {
      const float x0 = static_cast<float>(l.x.px(static_cast<double>(i)));
      const float x1 = static_cast<float>(l.x.px(static_cast<double>(i + 1)));
      if (x1 > x0) area.push_back({x0, static_cast<float>(l.y.px(static_cast<double>(points[i].load_bytes))), x1, plot.y1});
    }
  }
  return area;
}

void draw_curves(Painter& p, const MemoryLoadLayout& l, const MemoryLoadScene& scene, const MemoryLoadFocus& focus,
                 MemoryLoadCache& kept) {
  const Box& plot = l.curves;
  p.fill_rect(plot, kPlotBackground);
  const ByteUnit unit = byte_unit_for(l.y.d1);
  draw_y_axis(p, plot, l.y, nice_ticks_in(0, l.y.d1, std::max(2, static_cast<int>(plot.height() / 55)), unit.bytes),
              unit.bytes, std::string("bytes (") + unit.name + ")");
  // The axis's whole name where the plot is wide enough for it.
  const std::string steps = "steps of the recent iterations, one sample after each";
  draw_x_axis(p, plot, l.x, {}, 1,
              p.text_size(steps, TextSize::small).x <= plot.width() ? steps : "steps, one sample after each", false);
  if (scene.points.empty()) {
    p.text({(plot.x0 + plot.x1) / 2, (plot.y0 + plot.y1) / 2}, "no per-step samples", kDimText, TextSize::label,
           HAlign::centre, VAlign::middle);
    return;
  }
  const std::vector<LoadPoint>& points = scene.points;
  // Iteration boundaries, under the curves.
  if (!kept.iteration_starts) {
    kept.iteration_starts.emplace();
    for (std::size_t i = 0; i < points.size(); ++i)
      if (i == 0 || points[i].iteration != points[i - 1].iteration) kept.iteration_starts->push_back(i);
  }
  for (std::size_t i : *kept.iteration_starts) {
    const float x = static_cast<float>(l.x.px(static_cast<double>(i)));
    if (i > 0) dashed_line(p, {x, plot.y0}, {x, plot.y1}, kAxis);
    p.text({x + 4, plot.y0 + 4}, "it " + std::to_string(shown_iteration(points[i].iteration)), kDimText, TextSize::small);
  }
  const auto drawn_on = std::make_pair(plot, std::make_pair(l.x, l.y));
  if (kept.curves_for != drawn_on) {
    kept.load_area = load_area(l, points);
    kept.load = step_curve(l, points, [](const LoadPoint& s) { return s.load_bytes; });
    kept.extent = step_curve(l, points, [](const LoadPoint& s) { return s.extent_bytes; });
    kept.curves_for = drawn_on;
  }
  for (const Box& column : kept.load_area) p.fill_rect(column, {kLoad, 0.18f});
  // Two pixels per line while the steps are wide enough to stay apart; one
  // when they crowd, or the curve becomes a smear. The extent goes on top:
  // it is never below the load, so it shows where they part.
  const float thickness = plot.width() >= 2.0f * static_cast<float>(points.size()) ? 2 : 1;
  p.polyline(kept.load, kLoad, thickness);
  p.polyline(kept.extent, kExtent, 1);
  if (focus.sample >= 0 && static_cast<std::size_t>(focus.sample) < points.size()) {
    const float x = static_cast<float>(l.x(focus.sample + 0.5));
    p.line({x, plot.y0}, {x, plot.y1 - 1}, {kHighlight, 0.5f});
  }

  // The peak's value beside it, on whichever side has room, on a plate so
  // the curves under it do not garble it.
  const double index = static_cast<double>(std::min(scene.peak_index, points.size() - 1)) + 0.5;
  const Point peak{static_cast<float>(l.x.px(index)), static_cast<float>(l.y.px(static_cast<double>(scene.peak_load_bytes)))};
  const std::string label = "peak " + format_bytes(scene.peak_load_bytes);
  const Point size = p.text_size(label, TextSize::label);
  const bool left = peak.x + 12 + size.x > plot.x1;
  // Centred on the marker, kept inside the plot.
  const float middle = std::clamp(peak.y, plot.y0 + size.y / 2 + 3, plot.y1 - size.y / 2 - 3);
  text_on_plate(p, {left ? peak.x - 12 : peak.x + 12, middle}, label, kPeakMarker, TextSize::label,
                left ? HAlign::right : HAlign::left, VAlign::middle);
  // The budget over everything but the marker: the line the load must stay
  // under. Its name sits inside the plot, above the line at the right end
  // (the iterations are numbered at the left), so a narrow picture (a
  // window's view) keeps it.
  if (scene.budget_bytes > 0) {
    const float y = static_cast<float>(l.y.px(static_cast<double>(scene.budget_bytes)));
    p.line({plot.x0, y}, {plot.x1, y}, kBudget, 2);
    text_on_plate(p, {plot.x1 - 6, y - 4}, "budget " + format_bytes(scene.budget_bytes), kBudget, TextSize::small,
                  HAlign::right, VAlign::bottom);
  }
  if (scene.load_limit_bytes > 0) {  // AutoSwap offloads what keeps the load under this
    const float y = static_cast<float>(l.y.px(static_cast<double>(scene.load_limit_bytes)));
    p.line({plot.x0, y}, {plot.x1, y}, kLoadLimit, 1);
    text_on_plate(p, {plot.x0 + 6, y + 5}, "AutoSwap load limit " + format_bytes(scene.load_limit_bytes), kLoadLimit,
                  TextSize::small);
  }
  // One marker: a white dot (the PNG drew a ring, the window a dot; the dot
  // shows at a glance in both).
  dot(p, peak, 5, kPeakMarker);
}

struct Series {
  std::vector<double> values;
  std::uint32_t colour;
};

// One small multiple: the series against the iteration number, with its
// own value axis. The title is in parts, each in the colour of the series
// it names. `instead`: words that stand in the panel in place of the
// series, whose values mean nothing (a device that computes none).
void draw_panel(Painter& p, const Box& panel, const LinearScale& x, const LegendEntries& title,
                const std::vector<std::int64_t>& iterations, const std::vector<Series>& series, double lo, double hi,
                double unit_divisor, bool titled_axis, const char* instead = nullptr) {
  p.fill_rect(panel, kPlotBackground);
  float title_x = panel.x0;
  for (const auto& [text, colour] : title) {
    p.text({title_x, panel.y0 - panel_title_row(p) + 2}, text, colour, TextSize::small);
    title_x += p.text_size(text, TextSize::small).x;
  }
  if (hi <= lo) hi = lo + 1;
  const LinearScale y{lo, hi, panel.y1, panel.y0};
  std::vector<double> x_ticks;
  for (double t : nice_ticks(x.d0, x.d1, std::max(2, static_cast<int>(panel.width() / 70))))
    if (std::abs(t - std::round(t)) < 1e-9) x_ticks.push_back(t);  // iterations are whole numbers
  // A tick every 40 pixels or so; a panel squeezed into a small window
  // keeps one or two, not labels printed over each other.
  draw_y_axis(p, panel, y, nice_ticks_in(lo, hi, std::max(1, static_cast<int>(panel.height() / 40)), unit_divisor),
              unit_divisor, "");
  draw_x_axis(p, panel, x, x_ticks, 1, titled_axis ? "iteration" : "");
  if (iterations.empty() || instead) {
    p.text({(panel.x0 + panel.x1) / 2, (panel.y0 + panel.y1) / 2}, instead ? instead : "no finished iterations",
           kDimText, TextSize::small, HAlign::centre, VAlign::middle);
    return;
  }
  for (const Series& s : series) {
    std::vector<Point> line;
    line.reserve(s.values.size());
    for (std::size_t i = 0; i < s.values.size(); ++i)
      line.push_back({static_cast<float>(x(static_cast<double>(iterations[i]))), static_cast<float>(y(s.values[i]))});
    p.polyline(line, s.colour, 2);
    if (line.size() <= 40)  // dots while they stay apart
      for (const Point& at : line) dot(p, at, 3, s.colour);
  }
}

void draw_iterations(Painter& p, const MemoryLoadLayout& l, const MemoryLoadScene& scene) {
  std::vector<std::int64_t> its;
  Series peak{{}, kLoad}, footprint{{}, kExtent}, loss{{}, kLossColour}, accuracy{{}, kAccuracyColour},
      throughput{{}, kThroughputColour};
  double max_bytes = 1, max_loss = 0, max_throughput = 0;
  for (const IterationPoint& it : scene.iterations) {
    its.push_back(shown_iteration(it.iteration));  // the panels' x axis counts as people do
    peak.values.push_back(static_cast<double>(it.peak_load_bytes));
    footprint.values.push_back(static_cast<double>(it.footprint_bytes));
    loss.values.push_back(it.loss);
    accuracy.values.push_back(100.0 * it.accuracy);
    throughput.values.push_back(it.images_per_second);
    max_bytes = std::max({max_bytes, static_cast<double>(it.peak_load_bytes), static_cast<double>(it.footprint_bytes)});
    max_loss = std::max(max_loss, static_cast<double>(it.loss));
    max_throughput = std::max(max_throughput, it.images_per_second);
  }
  // The axis is titled under the bottom row only.
  const float bottom_row = l.panels[3].y0;
  auto panel = [&](int i, const LegendEntries& title, const std::vector<Series>& series, double hi, double unit,
                   const char* instead = nullptr) {
    const std::size_t k = static_cast<std::size_t>(i);
    draw_panel(p, l.panels[k], l.panel_x[k], title, its, series, 0, hi, unit, l.panels[k].y0 == bottom_row, instead);
  };
  // The sim device's losses and accuracies are zeros: a flat line at 0
  // would read as a result.
  const char* no_numbers = scene.computes_values ? nullptr : kNoNumbers;
  const ByteUnit unit = byte_unit_for(max_bytes);
  panel(0, {{"peak load", kLoad}, {" / ", kText}, {"footprint", kExtent}, {std::string(" (") + unit.name + ")", kText}},
        {footprint, peak}, max_bytes * 1.1, unit.bytes);
  panel(1, {{"loss", kLossColour}}, {loss}, max_loss * 1.1, 1, no_numbers);
  panel(2, {{"accuracy (%)", kAccuracyColour}}, {accuracy}, 100, 1, no_numbers);
  panel(3, {{"images / s", kThroughputColour}}, {throughput}, max_throughput * 1.1, 1);
}

}  // namespace

std::size_t memory_load_own_top(const MemoryLoadScene& scene) {
  std::size_t highest = std::max({scene.budget_bytes, scene.max_extent_bytes, scene.peak_load_bytes});
  for (const LoadPoint& s : scene.points) highest = std::max({highest, s.load_bytes, s.extent_bytes});
  return std::max<std::size_t>(highest, 1);
}

bool MemoryLoadCache::use(const MemoryLoadScene& scene) {
  if (scene.generation == 0) return false;
  if (scene.generation != generation || scene.points.data() != points || scene.points.size() != point_count) {
    *this = {};
    generation = scene.generation;
    points = scene.points.data();
    point_count = scene.points.size();
  }
  return true;
}

std::size_t memory_load_top(const MemoryLoadScene& scene, MemoryLoadCache* cache) {
  std::size_t own = 0;
  if (cache && cache->use(scene)) {
    if (!cache->own_top) cache->own_top = memory_load_own_top(scene);
    own = *cache->own_top;
  } else {
    own = memory_load_own_top(scene);
  }
  return std::max(own, scene.axis_bytes);
}

MemoryLoadLayout memory_load_layout(const Painter& p, const MemoryLoadScene& scene, const Box& area,
                                    MemoryLoadCache* cache) {
  MemoryLoadLayout l;
  const float top = area.y0 + heading_height(p, area, title_of(scene), legend(scene)) + axis_title_height(p);
  const float left = area.x0 + kMargin + value_labels_width(p);
  const int columns = area.width() >= kWidePicture ? 4 : 2, rows = 4 / columns;
  // The curves take a little over half the height; the panels' rows share
  // the rest, each under its title row and over its tick labels.
  const float curves_axis = x_axis_height(p, true);
  const float below = area.y1 - top;
  // In a short view the curves give up height until the panels keep
  // kMinPanel each, so that their axes' names stay inside the picture; a
  // view too short for both (half of two runs compared) keeps the curves
  // and says where the panels went.
  const float rows_room = rows * panel_title_row(p) + (rows - 1) * x_axis_height(p, false) + x_axis_height(p, true);
  const float room = below - curves_axis - rows_room - rows * kMinPanel;
  l.with_panels = room >= kMinCurves;
  const float curves_height =
      l.with_panels ? std::min(std::floor(below * (rows == 1 ? 0.56f : 0.5f)) - curves_axis, room)
                    : std::max(20.0f, below - curves_axis - line_height(p, TextSize::small) - 6);  // the note under the axis
  l.curves = {left, top, std::max(left + 1, area.x1 - kRightMargin), top + curves_height};
  const double samples = static_cast<double>(std::max<std::size_t>({1, scene.points.size(), scene.axis_samples}));
  l.x = {0, samples, l.curves.x0, l.curves.x1};
  // 8% headroom, for the peak's label.
  l.y = {0, static_cast<double>(memory_load_top(scene, cache)) * 1.08, l.curves.y1, l.curves.y0};

  if (!l.with_panels) return l;
  const float panels_top = l.curves.y1 + curves_axis;
  const float panel_height = std::max(kMinPanel, std::floor((area.y1 - panels_top - rows_room) / rows));
  const float gap = value_labels_width(p) + 24;  // the next panel's tick labels
  const float panel_width =
      std::max(20.0f, std::floor((area.x1 - kRightMargin - left - (columns - 1) * gap) / static_cast<float>(columns)));
  double first = scene.iterations.empty() ? 1 : static_cast<double>(shown_iteration(scene.iterations.front().iteration));
  double last = scene.iterations.empty() ? 2 : static_cast<double>(shown_iteration(scene.iterations.back().iteration));
  if (last <= first) {  // one iteration: centre it
    first -= 0.5;
    last += 0.5;
  }
  for (int i = 0; i < 4; ++i) {
    const int row = i / columns, column = i % columns;
    const float y0 = panels_top + panel_title_row(p) + row * (panel_title_row(p) + panel_height + x_axis_height(p, false));
    const float x0 = left + column * (panel_width + gap);
    const std::size_t k = static_cast<std::size_t>(i);
    l.panels[k] = {x0, y0, x0 + panel_width, y0 + panel_height};
    l.panel_x[k] = {first, last, x0 + 4, x0 + panel_width - 4};
  }
  return l;
}

void draw_memory_load(Painter& p, const MemoryLoadScene& scene, const Box& area, const MemoryLoadFocus& focus,
                      MemoryLoadCache* cache) {
  p.fill_rect(area, kBackground);
  if (scene.empty()) return draw_no_events(p, area, kTitle);
  // What is worked out from every sample, kept in `cache` while what it
  // depends on stays, or here for this draw alone.
  MemoryLoadCache fresh;
  MemoryLoadCache& kept = cache && cache->use(scene) ? *cache : fresh;
  const MemoryLoadLayout l = memory_load_layout(p, scene, area, &kept);
  draw_heading(p, area, title_of(scene), legend(scene));
  draw_curves(p, l, scene, focus, kept);
  if (l.with_panels)
    draw_iterations(p, l, scene);
  else
    p.text({l.curves.x0, l.curves.y1 + x_axis_height(p, true)},
           "(a taller view shows each iteration's peak, loss, accuracy and images/s)", kDimText, TextSize::small);
}

}  // namespace tidepool::ui::paint
