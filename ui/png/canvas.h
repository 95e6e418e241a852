// Drawing helpers the --batch pictures share: colours from the shared
// palette (ui/scene/colours.h, 0xRRGGBB) into OpenCV's BGR, text, linear
// scales with round tick values, axes, legends and byte formatting, so the
// timeline, the address map and the memory-load picture look like one set.
//
// Fills and straight lines are drawn without anti-aliasing, so a rectangle
// of a palette colour holds exactly that colour (the tests read pixels
// back); text and curves are anti-aliased.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

#include "engine/core/bytes_text.h"

namespace tidepool::ui::png {

// ---- colours ----------------------------------------------------------------

// A palette colour (0xRRGGBB) as OpenCV's BGR scalar.
cv::Scalar bgr(std::uint32_t rgb);
// The colour scaled towards black (factor < 1) or white (factor > 1).
std::uint32_t shade(std::uint32_t rgb, double factor);
// Whether dark text reads better than light text on this colour.
bool is_light(std::uint32_t rgb);

inline constexpr std::uint32_t kText = 0xE6E6EA;
inline constexpr std::uint32_t kDimText = 0x9A9AA4;
inline constexpr std::uint32_t kAxis = 0x8A8A94;
inline constexpr std::uint32_t kGrid = 0x2E2E36;
inline constexpr std::uint32_t kPlotBackground = 0x202026;
inline constexpr std::uint32_t kDarkText = 0x101014;

// ---- text -------------------------------------------------------------------

inline constexpr double kSmallText = 0.42;
inline constexpr double kLabelText = 0.5;
inline constexpr double kTitleText = 0.68;

enum class HAlign { left, centre, right };
enum class VAlign { top, middle, baseline, bottom };

// The pixel size of a line of text (OpenCV's Hershey font, ASCII only:
// other bytes are drawn as '?').
cv::Size text_size(std::string_view text, double scale, int thickness = 1);
// Draws one line of text with its anchor at `at`.
void put_text(cv::Mat& image, std::string_view text, cv::Point at, double scale, std::uint32_t colour,
              HAlign h = HAlign::left, VAlign v = VAlign::baseline, int thickness = 1);
// `text` cut down with a trailing ".." so it is at most `max_width` pixels
// wide ("" if not even the first letter fits).
std::string fit_text(std::string_view text, int max_width, double scale);

// ---- numbers ----------------------------------------------------------------

// A value with the fewest decimals that tell ticks `step` apart ("0.25", "40").
std::string format_tick(double value, double step);
// A value with `decimals` decimals.
std::string format_fixed(double value, int decimals);

// The unit an axis of byte values is labelled in: MiB for the sizes runs
// have, KiB or B for the tiny pools of tests and toy sequences.
struct ByteUnit {
  double bytes = 1;
  const char* name = "B";
};
ByteUnit byte_unit_for(double max_bytes);

// ---- scales and axes --------------------------------------------------------

// Maps [d0, d1] (data) onto [r0, r1] (pixels); r1 < r0 for a y axis that
// grows upwards. A degenerate domain maps everything to r0.
struct LinearScale {
  double d0 = 0, d1 = 1;
  double r0 = 0, r1 = 1;
  double operator()(double v) const;
  int px(double v) const;  // rounded to the nearest pixel
};

// Round tick values ("1, 2, 5 times a power of ten") covering [lo, hi],
// about `target` of them, all inside [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target);
// Ticks that are round in a display unit (`unit_divisor` data units, e.g.
// MiB for bytes), returned in data units: nice_ticks(lo / u, hi / u) * u.
std::vector<double> nice_ticks_in(double lo, double hi, int target, double unit_divisor);
// The distance between consecutive nice ticks (0 with fewer than two).
double tick_step(const std::vector<double>& ticks);

// A left axis along `plot`: tick labels (value / unit_divisor, formatted
// for the tick step), grid lines across the plot, and the axis title
// written above the axis.
void draw_y_axis(cv::Mat& image, const cv::Rect& plot, const LinearScale& y, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title, std::uint32_t colour = kAxis, bool grid = true);
// The same on the right side of `plot`, no grid (a second quantity).
void draw_right_axis(cv::Mat& image, const cv::Rect& plot, const LinearScale& y, const std::vector<double>& ticks,
                     double unit_divisor, const std::string& title, std::uint32_t colour);
// A bottom axis: tick labels under the plot, grid lines across it, the title
// centred below the labels.
void draw_x_axis(cv::Mat& image, const cv::Rect& plot, const LinearScale& x, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title, bool grid = true);

// ---- shapes -----------------------------------------------------------------

// A filled rectangle [x0, x1) x [y0, y1), clipped to the image; nothing if
// it is empty. Coordinates are rounded outwards so that a thin block still
// shows as one pixel.
void fill_rect(cv::Mat& image, double x0, double y0, double x1, double y1, std::uint32_t colour);
// Diagonal hatching inside a rectangle.
void hatch(cv::Mat& image, const cv::Rect& area, std::uint32_t colour, int spacing = 6, int thickness = 1);
// A horizontal or vertical line drawn in dashes.
void dashed_line(cv::Mat& image, cv::Point a, cv::Point b, std::uint32_t colour, int dash = 6, int gap = 4,
                 int thickness = 1);

// ---- composition ------------------------------------------------------------

// A canvas of the shared background colour. Throws std::invalid_argument
// for sizes below 320 x 200, where nothing would be readable.
cv::Mat new_canvas(int width, int height);
// The title line at the top of a picture; returns title_bottom().
int draw_title(cv::Mat& image, const std::string& title);
// The y below the title line (the same for every picture).
int title_bottom();

// A legend: swatches and names in rows from `at` (top-left), wrapping
// before `max_x`; returns the y below it, which is at.y + legend_height(...)
// so a layout can reserve the room before drawing.
using LegendEntries = std::vector<std::pair<std::string, std::uint32_t>>;
int draw_legend(cv::Mat& image, cv::Point at, int max_x, const LegendEntries& entries);
int legend_height(int width, const LegendEntries& entries);
// The height a picture of `width` x `height` gives its legend, drawn below
// the title: legend_height, or 0 (no legend) where it would take more than
// a fifth of the picture, so small pictures keep their plot.
int legend_room(int width, int height, const LegendEntries& entries);
// Draws the legend below the title if legend_room gives it any.
void draw_legend_below_title(cv::Mat& image, const LegendEntries& entries);
// The picture of a scene with nothing in it: its title and a message in the
// middle, so a run that recorded no events still writes a readable file.
void draw_no_events(cv::Mat& image, const std::string& title, const std::string& message = "no events recorded");

}  // namespace tidepool::ui::png
