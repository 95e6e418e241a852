// What the three pictures share, over any Painter: the colours of text and
// plot furniture, linear scales with round tick values, axes, a title line
// with a legend under it, hatching, dashes, and the formatting of numbers,
// so the timeline, the address map and the memory-load picture look like
// one set in the window and in the PNGs alike.
//
// Sizes that depend on text (margins, rows) are measured with the painter,
// so a layout fits ImGui's font in the window and OpenCV's in a PNG.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/bytes_text.h"
#include "ui/paint/painter.h"

namespace tidepool::ui::paint {

// ---- colours ----------------------------------------------------------------

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
inline constexpr std::uint32_t kHighlight = 0xFFFFFF;  // what the pointer is on, in the window

// ---- text -------------------------------------------------------------------

// The height of a line of text of `size`.
float line_height(const Painter& p, TextSize size);
// `text` cut down with a trailing ".." so it is at most `max_width` pixels
// wide ("" if not even the first letter fits).
std::string fit_text(const Painter& p, std::string_view text, float max_width, TextSize size);
// Text over a patch of the plot's background, so the rectangles and
// curves under it do not garble it.
void text_on_plate(Painter& p, Point at, std::string_view text, Colour colour, TextSize size,
                   HAlign h = HAlign::left, VAlign v = VAlign::top);

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
  double invert(double pixel) const;  // the data value at a pixel
  bool operator==(const LinearScale&) const = default;
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
void draw_y_axis(Painter& p, const Box& plot, const LinearScale& y, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title);
// A bottom axis: tick labels under the plot, grid lines across it, the title
// centred below the labels.
void draw_x_axis(Painter& p, const Box& plot, const LinearScale& x, const std::vector<double>& ticks,
                 double unit_divisor, const std::string& title, bool grid = true);
// The room draw_x_axis takes under a plot, with or without a title.
float x_axis_height(const Painter& p, bool titled);
// The y of the middle of draw_x_axis's tick labels (for a title beside them).
float x_tick_labels_middle(const Painter& p, const Box& plot);
// The room above a plot that a y axis title (or a row of labels) takes.
float axis_title_height(const Painter& p);

// ---- shapes -----------------------------------------------------------------

// Diagonal hatching inside a box.
void hatch(Painter& p, const Box& area, Colour colour, float spacing = 6, float thickness = 1);
// A straight line drawn in dashes.
void dashed_line(Painter& p, Point a, Point b, Colour colour, float dash = 6, float gap = 4, float thickness = 1);
// A filled round dot.
void dot(Painter& p, Point centre, float radius, Colour colour);

// ---- composition ------------------------------------------------------------

// The margin every picture keeps inside its area.
inline constexpr float kMargin = 16;

// A legend: swatches and names in rows, wrapping at the area's width.
using LegendEntries = std::vector<std::pair<std::string, std::uint32_t>>;

// The title at the top of `area`, on as many lines as its width needs
// (broken at the title's "  |  " separators; a part wider than the area
// alone is cut with ".."), and, where it takes no more than a quarter of
// the height (a small picture keeps its plot), the legend under it.
// heading_height is the room draw_heading takes, so a layout can reserve
// it before drawing.
std::vector<std::string> title_lines(const Painter& p, const Box& area, std::string_view title);
float heading_height(const Painter& p, const Box& area, std::string_view title, const LegendEntries& legend);
void draw_heading(Painter& p, const Box& area, const std::string& title, const LegendEntries& legend);

// The picture of a scene with nothing in it: its title and a message in the
// middle, so a run that recorded no events still writes a readable file.
void draw_no_events(Painter& p, const Box& area, const std::string& title,
                    const std::string& message = "no events recorded");

}  // namespace tidepool::ui::paint
