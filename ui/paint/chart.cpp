#include "ui/paint/chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numbers>

namespace tidepool::ui::paint {

// ---- colours ----------------------------------------------------------------

std::uint32_t shade(std::uint32_t rgb, double factor) {
  auto channel = [&](int shift) {
    const double c = (rgb >> shift) & 0xFF;
    const double v = factor <= 1 ? c * factor : c + (255 - c) * (factor - 1);
    return static_cast<std::uint32_t>(std::clamp(std::lround(v), 0L, 255L)) << shift;
  };
  return channel(16) | channel(8) | channel(0);
}

bool is_light(std::uint32_t rgb) {
  // Rec. 601 luma: green reads brightest, blue darkest.
  const double luma = 0.299 * ((rgb >> 16) & 0xFF) + 0.587 * ((rgb >> 8) & 0xFF) + 0.114 * (rgb & 0xFF);
  return luma > 140;
}

// ---- text -------------------------------------------------------------------

float line_height(const Painter& p, TextSize size) { return p.text_size("Ag", size).y; }

std::string fit_text(const Painter& p, std::string_view text, float max_width, TextSize size) {
  if (p.text_size(text, size).x <= max_width) return std::string(text);
  for (std::size_t n = text.size(); n-- > 1;) {
    std::string cut = std::string(text.substr(0, n)) + "..";
    if (p.text_size(cut, size).x <= max_width) return cut;
  }
  return "";
}

void text_on_plate(Painter& p, Point at, std::string_view text, Colour colour, TextSize size, HAlign h, VAlign v) {
  const Point extent = p.text_size(text, size);
  const Point corner = aligned_top_left(at, extent, h, v);
  p.fill_rect({corner.x - 3, corner.y - 2, corner.x + extent.x + 3, corner.y + extent.y + 2}, kPlotBackground);
  p.text(corner, text, colour, size);
}

// ---- numbers ----------------------------------------------------------------

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", std::clamp(decimals, 0, 9), value);
  return buffer;
}

std::string format_tick(double value, double step) {
  // The fewest decimals that keep consecutive ticks distinct.
  int decimals = 0;
  if (step > 0) {
    for (double scaled = step; decimals < 6; ++decimals, scaled *= 10)
      if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
  }
  if (std::abs(value) < 1e-12) value = 0;  // no "-0"
  return format_fixed(value, decimals);
}

ByteUnit byte_unit_for(double max_bytes) {
  if (max_bytes >= 1024.0 * 1024.0) return {1024.0 * 1024.0, "MiB"};
  if (max_bytes >= 1024.0) return {1024.0, "KiB"};
  return {1.0, "B"};
}

// ---- scales and axes --------------------------------------------------------

double LinearScale::operator()(double v) const {
  if (d1 == d0) return r0;
  return r0 + (v - d0) / (d1 - d0) * (r1 - r0);
}

int LinearScale::px(double v) const { return static_cast<int>(std::lround((*this)(v))); }

double LinearScale::invert(double pixel) const {
  if (r1 == r0) return d0;
  return d0 + (pixel - r0) / (r1 - r0) * (d1 - d0);
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo) || target < 1) return {lo};
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

std::vector<double> nice_ticks_in(double lo, double hi, int target, double unit_divisor) {
  std::vector<double> ticks = nice_ticks(lo / unit_divisor, hi / unit_divisor, target);
  for (double& t : ticks) t *= unit_divisor;
  return ticks;
}

double tick_step(const std::vector<double>& ticks) { return ticks.size() < 2 ? 0 : ticks[1] - ticks[0]; }

namespace {
constexpr float kTick = 4;       // tick marks' length
constexpr float kTickGap = 8;    // from the axis to its labels
constexpr float kRowGap = 6;     // between rows of text
}  // namespace

void draw_y_axis(Painter& p, const Box& plot, const LinearScale& y, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title) {
  const double step = tick_step(ticks) / unit_divisor;
  for (double t : ticks) {
    const float py = static_cast<float>(y.px(t));
    p.line({plot.x0 + 1, py}, {plot.x1 - 1, py}, kGrid);
    p.line({plot.x0 - kTick, py}, {plot.x0, py}, kAxis);
    p.text({plot.x0 - kTickGap, py}, format_tick(t / unit_divisor, step), kAxis, TextSize::small, HAlign::right,
           VAlign::middle);
  }
  p.line({plot.x0, plot.y0}, {plot.x0, plot.y1}, kAxis);
  p.text({plot.x0, plot.y0 - kTickGap}, title, kAxis, TextSize::small, HAlign::left, VAlign::bottom);
}

void draw_x_axis(Painter& p, const Box& plot, const LinearScale& x, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title, bool grid) {
  const float y = plot.y1;
  const double step = tick_step(ticks) / unit_divisor;
  for (double t : ticks) {
    const float px = static_cast<float>(x.px(t));
    if (grid) p.line({px, plot.y0}, {px, y - 1}, kGrid);
    p.line({px, y}, {px, y + kTick}, kAxis);
    p.text({px, y + kTickGap}, format_tick(t / unit_divisor, step), kAxis, TextSize::small, HAlign::centre);
  }
  p.line({plot.x0, y}, {plot.x1, y}, kAxis);
  if (!title.empty())
    p.text({(plot.x0 + plot.x1) / 2, y + kTickGap + line_height(p, TextSize::small) + kRowGap}, title, kDimText,
           TextSize::small, HAlign::centre);
}

float x_axis_height(const Painter& p, bool titled) {
  const float row = line_height(p, TextSize::small);
  return kTickGap + row + (titled ? kRowGap + row : 0) + kRowGap;
}

float x_tick_labels_middle(const Painter& p, const Box& plot) {
  return plot.y1 + kTickGap + line_height(p, TextSize::small) / 2;
}

float axis_title_height(const Painter& p) { return line_height(p, TextSize::small) + kTickGap + 4; }

// ---- shapes -----------------------------------------------------------------

void hatch(Painter& p, const Box& area, Colour colour, float spacing, float thickness) {
  if (area.width() <= 0 || area.height() <= 0 || spacing < 1) return;
  p.push_clip(area);  // the strokes run past the corners; the box cuts them
  const float h = area.height();
  for (float k = -h; k < area.width(); k += spacing)
    p.line({area.x0 + k, area.y1}, {area.x0 + k + h, area.y0}, colour, thickness);
  p.pop_clip();
}

void dashed_line(Painter& p, Point a, Point b, Colour colour, float dash, float gap, float thickness) {
  const float dx = b.x - a.x, dy = b.y - a.y;
  const float length = std::hypot(dx, dy);
  if (length < 1) return;
  for (float s = 0; s < length; s += dash + gap) {
    const float e = std::min(length, s + dash);
    p.line({a.x + dx * s / length, a.y + dy * s / length}, {a.x + dx * e / length, a.y + dy * e / length}, colour,
           thickness);
  }
}

void dot(Painter& p, Point centre, float radius, Colour colour) {
  std::array<Point, 16> ring;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const double angle = 2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(ring.size());
    ring[i] = {centre.x + radius * static_cast<float>(std::cos(angle)),
               centre.y + radius * static_cast<float>(std::sin(angle))};
  }
  p.fill_convex(ring, colour);
}

// ---- composition ------------------------------------------------------------

namespace {

constexpr float kTitleGap = 8;  // above and below the title line

float swatch_size(const Painter& p) { return std::max(8.0f, line_height(p, TextSize::small) - 2); }
float legend_row(const Painter& p) { return line_height(p, TextSize::small) + 8; }

float legend_entry_width(const Painter& p, const std::string& name) {
  return swatch_size(p) + 6 + p.text_size(name, TextSize::small).x + 12;
}

// Both the height and the drawing walk the entries this way, so the height
// reserved is the height drawn. Calls `place(entry, x, y)` for each.
template <typename Place>
float walk_legend(const Painter& p, const Box& area, const LegendEntries& entries, Place place) {
  const float row = legend_row(p);
  float x = area.x0, y = area.y0;
  for (const auto& entry : entries) {
    const float w = legend_entry_width(p, entry.first);
    if (x > area.x0 && x + w > area.x1) {  // wrap onto a new row
      x = area.x0;
      y += row;
    }
    place(entry, x, y);
    x += w;
  }
  return y + row - area.y0;
}

float title_row(const Painter& p, const Box& area, std::string_view title) {
  return kTitleGap + static_cast<float>(title_lines(p, area, title).size()) * line_height(p, TextSize::title) + kTitleGap;
}

// The legend's height, or 0 where it would take more than a quarter of the
// area (the window's timeline keeps its two rows; a small picture, its plot).
float legend_room(const Painter& p, const Box& area, const LegendEntries& legend) {
  if (legend.empty()) return 0;
  const Box row{area.x0 + kMargin, 0, area.x1 - kMargin, 0};
  const float needed = walk_legend(p, row, legend, [](const auto&, float, float) {});
  return needed * 4 <= area.height() ? needed : 0;
}

}  // namespace

std::vector<std::string> title_lines(const Painter& p, const Box& area, std::string_view title) {
  constexpr std::string_view kSeparator = "  |  ";
  const float width = area.width() - 2 * kMargin;
  std::vector<std::string> lines;
  std::string line;
  for (std::size_t from = 0; from <= title.size();) {
    const std::size_t to = std::min(title.find(kSeparator, from), title.size());
    const std::string_view part = title.substr(from, to - from);
    const std::string joined = line.empty() ? std::string(part) : line + std::string(kSeparator) + std::string(part);
    if (line.empty() || p.text_size(joined, TextSize::title).x <= width) {
      line = joined;
    } else {
      lines.push_back(fit_text(p, line, width, TextSize::title));
      line = std::string(part);
    }
    from = to + kSeparator.size();
  }
  lines.push_back(fit_text(p, line, width, TextSize::title));
  return lines;
}

float heading_height(const Painter& p, const Box& area, std::string_view title, const LegendEntries& legend) {
  return title_row(p, area, title) + legend_room(p, area, legend) + kRowGap;
}

void draw_heading(Painter& p, const Box& area, const std::string& title, const LegendEntries& legend) {
  const float line = line_height(p, TextSize::title);
  const std::vector<std::string> lines = title_lines(p, area, title);
  for (std::size_t i = 0; i < lines.size(); ++i)
    p.text({area.x0 + kMargin, area.y0 + kTitleGap + line * static_cast<float>(i)}, lines[i], kText, TextSize::title);
  if (legend_room(p, area, legend) == 0) return;
  const float swatch = swatch_size(p);
  const Box rows{area.x0 + kMargin, area.y0 + title_row(p, area, title), area.x1 - kMargin, area.y1};
  const float text_middle = line_height(p, TextSize::small) / 2;
  walk_legend(p, rows, legend, [&](const auto& entry, float x, float y) {
    const float middle = y + text_middle;
    p.fill_rect({x, middle - swatch / 2, x + swatch, middle + swatch / 2}, entry.second);
    p.text({x + swatch + 6, middle}, entry.first, kText, TextSize::small, HAlign::left, VAlign::middle);
  });
}

void draw_no_events(Painter& p, const Box& area, const std::string& title, const std::string& message) {
  draw_heading(p, area, title, {});
  const Box frame{area.x0 + kMargin, area.y0 + title_row(p, area, title), area.x1 - kMargin, area.y1 - kMargin};
  p.outline_rect(frame, kGrid);
  p.text({(frame.x0 + frame.x1) / 2, (frame.y0 + frame.y1) / 2}, message, kDimText, TextSize::title, HAlign::centre,
         VAlign::middle);
}

}  // namespace tidepool::ui::paint
