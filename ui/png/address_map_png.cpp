#include "ui/png/address_map_png.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

using png::HAlign;
using png::VAlign;

constexpr const char* kTitle = "Address map";
constexpr int kLeftMargin = 84;    // address labels
constexpr int kRightMargin = 210;  // the peak strip; pool, footprint and largest-hole labels
constexpr int kStripGap = 10, kStripWidth = 16;        // the pool at the peak, right of the plot
constexpr int kLabelOffset = kStripGap + kStripWidth + 6;  // labels, from the plot's right edge
constexpr int kBottomMargin = 56;
constexpr int kAxisTitleRow = 22;  // the y axis title above the plot
constexpr Role kRoles[] = {Role::input,          Role::activation,      Role::activation_gradient, Role::weight,
                           Role::weight_gradient, Role::optimizer_state, Role::workspace};

std::string role_name(Role r) {
  std::string name(to_string(r));
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

const png::LegendEntries& legend() {
  static const png::LegendEntries entries = [] {
    png::LegendEntries e;
    for (Role r : kRoles) e.emplace_back(role_name(r), role_colour(r));
    e.emplace_back("in flight to host", kInFlightToHost);
    e.emplace_back("in flight from host", kInFlightFromHost);
    e.emplace_back("parked (dead, still taken)", png::shade(kParked, 0.5));
    e.emplace_back("hole at the peak", kHole);
    e.emplace_back("largest free block at the peak", kLargestHole);
    return e;
  }();
  return entries;
}

std::string title_of(const AddressMapScene& scene) {
  std::string title = std::string(kTitle) + ": iteration " + std::to_string(scene.iteration) + "  |  peak load " +
                      format_bytes(scene.peak_load_bytes) + " at step " + std::to_string(scene.peak_step) +
                      "  |  footprint " + format_bytes(scene.footprint_bytes);
  if (scene.peak_load_bytes > 0)
    title += "  |  ratio " +
             png::format_fixed(static_cast<double>(scene.footprint_bytes) / scene.peak_load_bytes, 3);
  return title;
}

// The highest address the plot must show.
std::size_t top_of(const AddressMapScene& scene) {
  std::size_t top = std::max(scene.pool_bytes, scene.footprint_bytes);
  for (const MapBlock& b : scene.blocks) top = std::max(top, b.end());
  return std::max<std::size_t>(top, 1);
}

void draw_block(cv::Mat& image, const AddressMapLayout& l, const MapBlock& b) {
  const double y0 = l.y(static_cast<double>(b.end())), y1 = l.y(static_cast<double>(b.offset));
  auto columns = [&](int first, int last, std::uint32_t colour) {
    png::fill_rect(image, l.x(first), y0, l.x(last + 1), y1, colour);
  };
  columns(b.first_step, b.last_step, role_colour(b.role));
  // Dead but still taken: the role's colour, darkened.
  if (b.parked_until_step > b.last_step)
    columns(b.last_step + 1, b.parked_until_step, png::shade(role_colour(b.role), 0.4));
  // The steps during which the block's contents were moving.
  if (b.offload_step >= 0) columns(std::max(b.offload_step, b.first_step), b.last_step, kInFlightToHost);
  if (b.prefetch_done_step >= 0)
    columns(b.first_step, std::min(b.prefetch_done_step, b.last_step), kInFlightFromHost);

  const double x0 = l.x(b.first_step), x1 = l.x(b.last_step + 1);
  if (x1 - x0 >= 4 && y1 - y0 >= 4)  // an outline only where it leaves some fill to see
    cv::rectangle(image, cv::Point(static_cast<int>(x0), static_cast<int>(y0)),
                  cv::Point(static_cast<int>(x1) - 1, static_cast<int>(y1) - 1),
                  png::bgr(png::shade(role_colour(b.role), 0.55)), 1, cv::LINE_8);
  // The tensor's name where it fits.
  const cv::Size size = png::text_size(b.name, png::kSmallText);
  if (!b.name.empty() && size.width + 8 <= x1 - x0 && size.height + 6 <= y1 - y0)
    png::put_text(image, b.name, {static_cast<int>((x0 + x1) / 2), static_cast<int>((y0 + y1) / 2)},
                  png::kSmallText, png::is_light(role_colour(b.role)) ? png::kDarkText : png::kText,
                  HAlign::centre, VAlign::middle);
}

// A block's colour at one step: its role's, or the transfer's while its
// contents are in flight (a prefetch over an offload, as drawn).
std::uint32_t colour_at(const MapBlock& b, int step) {
  if (b.prefetch_done_step >= 0 && step <= std::min(b.prefetch_done_step, b.last_step)) return kInFlightFromHost;
  if (b.offload_step >= 0 && step >= b.offload_step) return kInFlightToHost;
  return role_colour(b.role);
}

// The peak: its step's column marked over the plot, its holes drawn in the
// column (the largest in its own colour), and the pool at that step
// repeated as a strip beside the plot, since one step's column can be a
// pixel wide.
void draw_peak(cv::Mat& image, const AddressMapLayout& l, const AddressMapScene& scene) {
  const double x0 = l.x(scene.peak_step), x1 = l.x(scene.peak_step + 1);
  const int cx = static_cast<int>((x0 + x1) / 2);
  const std::vector<cv::Point> arrow = {{cx - 5, l.plot.y - 8}, {cx + 5, l.plot.y - 8}, {cx, l.plot.y - 1}};
  cv::fillConvexPoly(image, arrow, png::bgr(kLargestHole), cv::LINE_AA);
  png::put_text(image, "peak", {cx + 8, l.plot.y - 4}, png::kSmallText, kLargestHole, HAlign::left, VAlign::bottom);

  const int sx0 = l.plot.x + l.plot.width + kStripGap, sx1 = sx0 + kStripWidth;
  png::fill_rect(image, sx0, l.plot.y, sx1, l.plot.y + l.plot.height, png::kPlotBackground);
  png::put_text(image, "at peak", {(sx0 + sx1) / 2, l.plot.y - 4}, png::kSmallText, png::kDimText, HAlign::centre,
                VAlign::bottom);
  auto band = [&](double x_from, double x_to, std::size_t offset, std::size_t bytes, std::uint32_t colour) {
    png::fill_rect(image, x_from, l.y(static_cast<double>(offset + bytes)), x_to, l.y(static_cast<double>(offset)),
                   colour);
  };
  for (const MapBlock& b : scene.blocks) {
    if (b.first_step <= scene.peak_step && scene.peak_step <= b.last_step)
      band(sx0, sx1, b.offset, b.bytes, colour_at(b, scene.peak_step));
    if (b.parked_at(scene.peak_step)) band(sx0, sx1, b.offset, b.bytes, png::shade(role_colour(b.role), 0.4));
  }
  for (const MapHole& h : scene.holes_at_peak) {
    band(x0, x1, h.offset, h.bytes, kHole);
    band(sx0, sx1, h.offset, h.bytes, kHole);
  }
  if (!scene.largest_free_at_peak) return;
  const MapHole& h = *scene.largest_free_at_peak;
  band(x0, x1, h.offset, h.bytes, kLargestHole);
  band(sx0, sx1, h.offset, h.bytes, kLargestHole);
  const int mid = l.y.px(static_cast<double>(h.offset) + static_cast<double>(h.bytes) / 2);
  const int lx = l.plot.x + l.plot.width + kLabelOffset;
  png::put_text(image, "largest free", {lx, mid - 2}, png::kSmallText, kLargestHole, HAlign::left, VAlign::bottom);
  png::put_text(image, "at peak " + format_bytes(h.bytes), {lx, mid + 2}, png::kSmallText, kLargestHole,
                HAlign::left, VAlign::top);
}

// A horizontal line across the plot with its name in the right margin,
// above or below the line.
void draw_level(cv::Mat& image, const AddressMapLayout& l, double bytes, std::uint32_t colour, int thickness,
                bool dashed, const std::string& label, bool label_above) {
  // Across the plot and the peak strip beside it.
  const int y = l.y.px(bytes), right = l.plot.x + l.plot.width + kStripGap + kStripWidth;
  if (dashed)
    png::dashed_line(image, {l.plot.x, y}, {right, y}, colour, 8, 5, thickness);
  else
    cv::line(image, {l.plot.x, y}, {right, y}, png::bgr(colour), thickness, cv::LINE_8);
  png::put_text(image, label, {l.plot.x + l.plot.width + kLabelOffset, label_above ? y - 3 : y + 3}, png::kSmallText,
                colour, HAlign::left, label_above ? VAlign::bottom : VAlign::top);
}

}  // namespace

AddressMapLayout address_map_layout(const AddressMapScene& scene, int width, int height) {
  AddressMapLayout l;
  const int top = png::title_bottom() + png::legend_room(width, height, legend()) + 6 + kAxisTitleRow;
  // A narrow picture gives the plot at least half its width; the labels
  // on the right may then be cut, the strip never is.
  const int right_margin = std::min(kRightMargin, width / 4);
  l.plot = cv::Rect(kLeftMargin, top, std::max(1, width - kLeftMargin - right_margin),
                    std::max(20, height - top - kBottomMargin));
  const double steps = std::max(scene.steps, 1);
  l.x = {0, steps, static_cast<double>(l.plot.x), static_cast<double>(l.plot.x + l.plot.width)};
  // 4% headroom above the highest address, for the pool line's label.
  const double top_bytes = static_cast<double>(top_of(scene)) * 1.04;
  l.y = {0, top_bytes, static_cast<double>(l.plot.y + l.plot.height), static_cast<double>(l.plot.y)};
  return l;
}

cv::Mat draw_address_map(const AddressMapScene& scene, int width, int height) {
  cv::Mat image = png::new_canvas(width, height);
  if (scene.empty()) {
    png::draw_no_events(image, kTitle);
    return image;
  }
  const AddressMapLayout l = address_map_layout(scene, width, height);
  png::draw_title(image, title_of(scene));
  png::draw_legend_below_title(image, legend());
  png::fill_rect(image, l.plot.x, l.plot.y, l.plot.x + l.plot.width, l.plot.y + l.plot.height, png::kPlotBackground);

  const png::ByteUnit unit = png::byte_unit_for(l.y.d1);
  png::draw_y_axis(image, l.plot, l.y, png::nice_ticks_in(0, l.y.d1, std::max(2, l.plot.height / 60), unit.bytes),
                   unit.bytes, std::string("address (") + unit.name + ")");
  // Step numbers under the middle of their columns, whole steps only.
  const png::LinearScale column_centres{-0.5, l.x.d1 - 0.5, l.x.r0, l.x.r1};
  std::vector<double> step_ticks;
  for (double t : png::nice_ticks(0, l.x.d1 - 1, std::max(2, l.plot.width / 90)))
    if (std::abs(t - std::round(t)) < 1e-9) step_ticks.push_back(std::round(t));
  png::draw_x_axis(image, l.plot, column_centres, step_ticks, 1, "step of the iteration");

  for (const MapBlock& b : scene.blocks) draw_block(image, l, b);
  draw_peak(image, l, scene);

  // The pool above the footprint: labels go on opposite sides of their
  // lines so the two never print over each other when they are close.
  const bool same_line = scene.pool_bytes == scene.footprint_bytes;
  if (scene.pool_bytes > 0)
    draw_level(image, l, static_cast<double>(scene.pool_bytes), kBudget, 2, false,
               (same_line ? "pool = footprint " : "pool ") + format_bytes(scene.pool_bytes), true);
  if (!same_line || scene.pool_bytes == 0)
    draw_level(image, l, static_cast<double>(scene.footprint_bytes), kExtent, 1, true,
               "footprint " + format_bytes(scene.footprint_bytes), scene.pool_bytes == 0);
  return image;
}

}  // namespace tidepool::ui
