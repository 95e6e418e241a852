#include "ui/png/canvas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <opencv2/imgproc.hpp>

#include "ui/scene/colours.h"

namespace tidepool::ui::png {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

// Hershey fonts have glyphs for printable ASCII only.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E) c = '?';
  return out;
}

}  // namespace

// ---- colours ----------------------------------------------------------------

cv::Scalar bgr(std::uint32_t rgb) {
  return cv::Scalar((rgb >> 0) & 0xFF, (rgb >> 8) & 0xFF, (rgb >> 16) & 0xFF);
}

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

cv::Size text_size(std::string_view text, double scale, int thickness) {
  int baseline = 0;
  return cv::getTextSize(printable(text), kFont, scale, thickness, &baseline);
}

void put_text(cv::Mat& image, std::string_view text, cv::Point at, double scale, std::uint32_t colour, HAlign h,
              VAlign v, int thickness) {
  if (text.empty()) return;
  const std::string s = printable(text);
  int baseline = 0;
  const cv::Size size = cv::getTextSize(s, kFont, scale, thickness, &baseline);
  if (h == HAlign::centre) at.x -= size.width / 2;
  if (h == HAlign::right) at.x -= size.width;
  if (v == VAlign::top) at.y += size.height;
  if (v == VAlign::middle) at.y += size.height / 2;
  if (v == VAlign::bottom) at.y -= baseline;
  cv::putText(image, s, at, kFont, scale, bgr(colour), thickness, cv::LINE_AA);
}

std::string fit_text(std::string_view text, int max_width, double scale) {
  if (text_size(text, scale).width <= max_width) return std::string(text);
  for (std::size_t n = text.size(); n-- > 1;) {
    std::string cut = std::string(text.substr(0, n)) + "..";
    if (text_size(cut, scale).width <= max_width) return cut;
  }
  return "";
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

void draw_y_axis(cv::Mat& image, const cv::Rect& plot, const LinearScale& y, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title, std::uint32_t colour, bool grid) {
  const double step = tick_step(ticks) / unit_divisor;
  for (double t : ticks) {
    const int py = y.px(t);
    if (grid) cv::line(image, {plot.x + 1, py}, {plot.x + plot.width - 1, py}, bgr(kGrid), 1, cv::LINE_8);
    cv::line(image, {plot.x - 4, py}, {plot.x, py}, bgr(colour), 1, cv::LINE_8);
    put_text(image, format_tick(t / unit_divisor, step), {plot.x - 7, py}, kSmallText, colour, HAlign::right,
             VAlign::middle);
  }
  cv::line(image, {plot.x, plot.y}, {plot.x, plot.y + plot.height}, bgr(colour), 1, cv::LINE_8);
  put_text(image, title, {plot.x, plot.y - 8}, kSmallText, colour, HAlign::left, VAlign::bottom);
}

void draw_right_axis(cv::Mat& image, const cv::Rect& plot, const LinearScale& y, const std::vector<double>& ticks,
                     double unit_divisor, const std::string& title, std::uint32_t colour) {
  const int x = plot.x + plot.width;
  const double step = tick_step(ticks) / unit_divisor;
  for (double t : ticks) {
    const int py = y.px(t);
    cv::line(image, {x, py}, {x + 4, py}, bgr(colour), 1, cv::LINE_8);
    put_text(image, format_tick(t / unit_divisor, step), {x + 7, py}, kSmallText, colour, HAlign::left,
             VAlign::middle);
  }
  cv::line(image, {x, plot.y}, {x, plot.y + plot.height}, bgr(colour), 1, cv::LINE_8);
  put_text(image, title, {x, plot.y - 8}, kSmallText, colour, HAlign::right, VAlign::bottom);
}

void draw_x_axis(cv::Mat& image, const cv::Rect& plot, const LinearScale& x, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title, bool grid) {
  const int y = plot.y + plot.height;
  const double step = tick_step(ticks) / unit_divisor;
  for (double t : ticks) {
    const int px = x.px(t);
    if (grid) cv::line(image, {px, plot.y}, {px, y - 1}, bgr(kGrid), 1, cv::LINE_8);
    cv::line(image, {px, y}, {px, y + 4}, bgr(kAxis), 1, cv::LINE_8);
    put_text(image, format_tick(t / unit_divisor, step), {px, y + 8}, kSmallText, kAxis, HAlign::centre,
             VAlign::top);
  }
  cv::line(image, {plot.x, y}, {plot.x + plot.width, y}, bgr(kAxis), 1, cv::LINE_8);
  put_text(image, title, {plot.x + plot.width / 2, y + 26}, kSmallText, kDimText, HAlign::centre, VAlign::top);
}

// ---- shapes -----------------------------------------------------------------

void fill_rect(cv::Mat& image, double x0, double y0, double x1, double y1, std::uint32_t colour) {
  if (x1 < x0) std::swap(x0, x1);
  if (y1 < y0) std::swap(y0, y1);
  // Clamp before converting: a block far outside the view must not overflow int.
  auto clamp_to = [](double v, int hi) { return std::clamp(v, -1.0, static_cast<double>(hi) + 1); };
  int ix0 = static_cast<int>(std::floor(clamp_to(x0, image.cols)));
  int iy0 = static_cast<int>(std::floor(clamp_to(y0, image.rows)));
  int ix1 = static_cast<int>(std::ceil(clamp_to(x1, image.cols)));
  int iy1 = static_cast<int>(std::ceil(clamp_to(y1, image.rows)));
  if (ix1 <= ix0) ix1 = ix0 + 1;
  if (iy1 <= iy0) iy1 = iy0 + 1;
  const cv::Rect r = cv::Rect(cv::Point(ix0, iy0), cv::Point(ix1, iy1)) & cv::Rect(0, 0, image.cols, image.rows);
  if (r.empty()) return;
  image(r).setTo(bgr(colour));
}

void hatch(cv::Mat& image, const cv::Rect& area, std::uint32_t colour, int spacing, int thickness) {
  const cv::Rect r = area & cv::Rect(0, 0, image.cols, image.rows);
  if (r.empty() || spacing < 1) return;
  cv::Mat roi = image(r);  // lines are clipped to the view
  for (int k = -r.height; k < r.width; k += spacing)
    cv::line(roi, {k, r.height}, {k + r.height, 0}, bgr(colour), thickness, cv::LINE_8);
}

void dashed_line(cv::Mat& image, cv::Point a, cv::Point b, std::uint32_t colour, int dash, int gap, int thickness) {
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double length = std::hypot(dx, dy);
  if (length < 1) return;
  for (double s = 0; s < length; s += dash + gap) {
    const double e = std::min(length, s + dash);
    const cv::Point p(static_cast<int>(std::lround(a.x + dx * s / length)),
                      static_cast<int>(std::lround(a.y + dy * s / length)));
    const cv::Point q(static_cast<int>(std::lround(a.x + dx * e / length)),
                      static_cast<int>(std::lround(a.y + dy * e / length)));
    cv::line(image, p, q, bgr(colour), thickness, cv::LINE_8);
  }
}

// ---- composition ------------------------------------------------------------

cv::Mat new_canvas(int width, int height) {
  if (width < 320 || height < 200)
    throw std::invalid_argument("picture of " + std::to_string(width) + " x " + std::to_string(height) +
                                " pixels: at least 320 x 200 needed");
  return cv::Mat(height, width, CV_8UC3, bgr(kBackground));
}

namespace {
constexpr int kTitleTop = 12;
constexpr int kLegendSwatch = 12, kLegendRow = 20;

int legend_entry_width(const std::string& name) {
  return kLegendSwatch + 6 + text_size(name, kSmallText).width + 18;
}
}  // namespace

int title_bottom() { return kTitleTop + text_size("Ag", kTitleText).height + 14; }

int draw_title(cv::Mat& image, const std::string& title) {
  put_text(image, fit_text(title, image.cols - 32, kTitleText), {16, kTitleTop}, kTitleText, kText, HAlign::left,
           VAlign::top, 1);
  return title_bottom();
}

// Both walk the entries the same way, so the height reserved is the height drawn.
int legend_height(int width, const LegendEntries& entries) {
  int x = 0, rows = 1;
  for (const auto& entry : entries) {
    const int w = legend_entry_width(entry.first);
    if (x > 0 && x + w > width) {
      x = 0;
      ++rows;
    }
    x += w;
  }
  return rows * kLegendRow;
}

int draw_legend(cv::Mat& image, cv::Point at, int max_x, const LegendEntries& entries) {
  int x = at.x, y = at.y;
  for (const auto& [name, colour] : entries) {
    const int w = legend_entry_width(name);
    if (x > at.x && x + w > max_x) {  // wrap onto a new row
      x = at.x;
      y += kLegendRow;
    }
    fill_rect(image, x, y + 2, x + kLegendSwatch, y + 2 + kLegendSwatch, colour);
    put_text(image, name, {x + kLegendSwatch + 6, y + 2 + kLegendSwatch / 2}, kSmallText, kText, HAlign::left,
             VAlign::middle);
    x += w;
  }
  return y + kLegendRow;
}

int legend_room(int width, int height, const LegendEntries& entries) {
  const int needed = legend_height(width - 32, entries);
  return needed * 5 <= height ? needed : 0;
}

void draw_legend_below_title(cv::Mat& image, const LegendEntries& entries) {
  if (legend_room(image.cols, image.rows, entries) > 0)
    draw_legend(image, {16, title_bottom()}, image.cols - 16, entries);
}

void draw_no_events(cv::Mat& image, const std::string& title, const std::string& message) {
  const int top = draw_title(image, title);
  const cv::Rect frame(16, top, image.cols - 32, image.rows - top - 16);
  cv::rectangle(image, frame, bgr(kGrid), 1, cv::LINE_8);
  put_text(image, message, {image.cols / 2, frame.y + frame.height / 2}, 1.0, kDimText, HAlign::centre,
           VAlign::middle, 2);
}

}  // namespace tidepool::ui::png
