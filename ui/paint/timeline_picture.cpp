// Where the window and the PNG used to differ, the look kept is the PNG's:
// lanes on one plot background with their names left of them (not
// alternating shades); a compute stall hatched red over its whole lane, so a
// one-pixel stall still shows (not a span outlined in red); a transfer
// stream's wait dimmed and thin, since it is idle time and no stall; span
// labels centred in a colour that reads on the fill; iteration boundaries
// numbered above the lanes with their stall times; round ticks in ms.
#include "ui/paint/timeline_picture.h"
#include "ui/scene/iteration_number.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "ui/scene/colours.h"

namespace tidepool::ui::paint {
namespace {

constexpr const char* kTitle = "Stream timeline";
constexpr float kRightMargin = 24;
constexpr float kLaneGap = 6;
constexpr float kSpanInset = 4;  // a span's rectangle, inside its lane
constexpr std::array<Stream, 4> kLanes = {Stream::compute, Stream::offload, Stream::prefetch, Stream::comm};
// A stall's outline: brighter than its fill so it stands out against the
// backward spans' red-orange.
constexpr std::uint32_t kStallOutline = 0xFF5A5A;
// A transfer stream waiting on compute is idle, not a stall: dimmed.
const std::uint32_t kIdle = shade(span_colour(SpanKind::wait), 0.45);

LegendEntries legend(const TimelineScene& scene) {
  LegendEntries entries = {
      {"forward", span_colour(SpanKind::forward)},
      {"backward", span_colour(SpanKind::backward)},
      {"accumulate", span_colour(SpanKind::accumulate)},
      {"update", span_colour(SpanKind::update)},
      {"offload D2H", span_colour(SpanKind::offload)},
      {"prefetch H2D", span_colour(SpanKind::prefetch)},
  };
  if (scene.recomputes()) entries.push_back({"recompute", span_colour(SpanKind::recompute)});
  if (scene.compresses()) {
    entries.push_back({"compress (host)", span_colour(SpanKind::compress)});
    entries.push_back({"decompress (host)", span_colour(SpanKind::decompress)});
  }
  if (scene.communicates()) {
    entries.push_back({"all-reduce", span_colour(SpanKind::all_reduce)});
    entries.push_back({"gradient bucket copy", span_colour(SpanKind::pack)});
  }
  // Short enough for one row across the window's timeline, whose lanes
  // need the height.
  entries.push_back({"compute stall (hatched)", span_colour(SpanKind::wait)});
  entries.push_back({"transfer stream idle", kIdle});
  return entries;
}

std::string ms(double us) { return format_fixed(us / 1000.0, us < 10000 ? 2 : 1) + " ms"; }

std::string title_of(const TimelineScene& scene) {
  std::string title = kTitle;
  if (!scene.iterations.empty()) {
    const auto first = scene.iterations.front().iteration, last = scene.iterations.back().iteration;
    title += ": " + iterations_text(first, last);
    double stall = 0;
    for (const TimelineIteration& it : scene.iterations) stall += it.stall_us;
    title += "  |  compute stalled " + ms(stall) + " of " + ms(scene.end_us - scene.start_us);
  }
  return title;
}

// The row above the lanes that holds the iteration numbers.
float iteration_row(const Painter& p) { return line_height(p, TextSize::small) + 10; }

// A span's rectangle cut to a little past the plot, so a zoomed-in span's
// label is centred on the part that shows.
Box visible(const TimelineLayout& l, Box b) {
  b.x0 = std::max(b.x0, l.plot.x0 - 2);
  b.x1 = std::min(b.x1, l.plot.x1 + 2);
  return b;
}

void draw_stall(Painter& p, const Box& r, double duration_us) {
  // The compute stream doing nothing: a dark gap hatched in red, so it
  // reads as idle time rather than as one more (red-orange) backward span.
  // Too narrow to hatch, it is solid red.
  const std::uint32_t red = span_colour(SpanKind::wait);
  if (r.width() < 6) {
    p.fill_rect(r, red);
    return;
  }
  p.fill_rect(r, shade(red, 0.3));
  hatch(p, r, red, 7, 2);
  p.outline_rect(r, kStallOutline, 2);
  // Its length where it fits, on a plate that keeps it readable over the hatching.
  const std::string label = "stall " + ms(duration_us);
  const Point size = p.text_size(label, TextSize::small);
  if (size.x + 12 <= r.width() && size.y + 8 <= r.height())
    text_on_plate(p, {(r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2}, label, kText, TextSize::small, HAlign::centre,
                  VAlign::middle);
}

// One span, drawn as its kind says.
void draw_span(Painter& p, const TimelineLayout& l, const TimelineSpan& span) {
  const Box r = visible(l, l.span_box(span));
  if (span.stall()) return draw_stall(p, r, span.duration_us());
  const bool idle = span.kind == SpanKind::wait;
  const std::uint32_t fill = idle ? kIdle : span_colour(span.kind);
  p.fill_rect(r, fill);
  if (idle) return;
  // The label, where it fits inside the span.
  const std::string label = span.label();
  const Point size = p.text_size(label, TextSize::small);
  if (size.x + 6 <= r.width() && size.y + 2 <= r.height())
    p.text({(r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2}, label, is_light(fill) ? kDarkText : kText, TextSize::small,
           HAlign::centre, VAlign::middle);
}

void draw_iteration_boundaries(Painter& p, const TimelineLayout& l, const TimelineScene& scene) {
  const float top = l.plot.y0 - iteration_row(p) + 4, bottom = l.plot.y1;
  for (std::size_t i = 0; i < scene.iterations.size(); ++i) {
    const TimelineIteration& it = scene.iterations[i];
    const float x = static_cast<float>(l.x.px(it.start_us));
    p.line({x, top}, {x, bottom}, kText);
    // The number, with the iteration's stall time where there is room up to
    // the next boundary.
    const float next = static_cast<float>(
        l.x.px(i + 1 < scene.iterations.size() ? scene.iterations[i + 1].start_us : it.end_us));
    std::string label = "it " + std::to_string(shown_iteration(it.iteration));
    if (it.stall_us > 0) {
      const std::string longer = label + "  stall " + ms(it.stall_us);
      if (p.text_size(longer, TextSize::small).x + 8 < next - x) label = longer;
    }
    if (p.text_size(label, TextSize::small).x + 8 < std::max(next - x, 40.0f))
      p.text({x + 4, top}, label, kText, TextSize::small);
  }
  if (!scene.iterations.empty()) {
    const float x = static_cast<float>(l.x.px(scene.iterations.back().end_us));
    dashed_line(p, {x, top}, {x, bottom}, kText);
  }
}

}  // namespace

const char* lane_name(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::offload: return "offload D2H";
    case Stream::prefetch: return "prefetch H2D";
    case Stream::comm: return "comm";
  }
  return "?";
}

Box TimelineLayout::lane(Stream s) const {
  const float index = static_cast<float>(static_cast<int>(s));
  const float height = std::floor((plot.height() - (lanes - 1) * kLaneGap) / lanes);
  const float y = plot.y0 + index * (height + kLaneGap);
  return {plot.x0, y, plot.x1, y + height};
}

Box TimelineLayout::span_box(const TimelineSpan& span) const {
  const Box band = lane(span.lane);
  const float x0 = static_cast<float>(x(span.start_us));
  const float x1 = std::max(static_cast<float>(x(span.end_us)), x0 + 1);
  if (span.stall()) return {x0, band.y0, x1, band.y1};
  const float inset = span.kind == SpanKind::wait ? std::floor(band.height() / 3) : kSpanInset;
  return {x0, band.y0 + inset, x1, band.y1 - inset};
}

TimelineLayout timeline_layout(const Painter& p, const TimelineScene& scene, const Box& area,
                               const TimelineFocus& focus) {
  TimelineLayout l;
  float names = 0;
  l.lanes = scene.communicates() ? 4 : 3;
  for (int i = 0; i < l.lanes; ++i) names = std::max(names, p.text_size(lane_name(kLanes[i]), TextSize::label).x);
  const float top = area.y0 + heading_height(p, area, title_of(scene), legend(scene)) + iteration_row(p);
  const float bottom = area.y1 - x_axis_height(p, false);
  const float left = area.x0 + kMargin + names + 12;
  l.plot = {left, top, std::max(left + 1, area.x1 - kRightMargin),
            std::max(top + l.lanes * 8 + (l.lanes - 1) * kLaneGap, bottom)};
  double start = scene.start_us, end = scene.end_us;
  if (focus.end_us > focus.start_us) {
    start = focus.start_us;
    end = focus.end_us;
  }
  if (end <= start) end = start + 1;
  l.x = {start, end, l.plot.x0, l.plot.x1};
  return l;
}

void draw_timeline(Painter& p, const TimelineScene& scene, const Box& area, const TimelineFocus& focus) {
  p.fill_rect(area, kBackground);
  if (scene.empty()) return draw_no_events(p, area, kTitle);
  const TimelineLayout l = timeline_layout(p, scene, area, focus);
  draw_heading(p, area, title_of(scene), legend(scene));

  for (int i = 0; i < l.lanes; ++i) {
    const Stream s = kLanes[i];
    const Box lane = l.lane(s);
    p.fill_rect(lane, kPlotBackground);
    p.text({lane.x0 - 10, (lane.y0 + lane.y1) / 2}, lane_name(s), kText, TextSize::label, HAlign::right,
           VAlign::middle);
  }
  // The time axis in ms from the scene's first event; its grid lies under
  // the spans. Its title goes left of the tick labels, under the lane names,
  // so the lanes keep that row.
  const LinearScale x_ms{(l.x.d0 - scene.start_us) / 1000.0, (l.x.d1 - scene.start_us) / 1000.0, l.x.r0, l.x.r1};
  draw_x_axis(p, l.plot, x_ms, nice_ticks(x_ms.d0, x_ms.d1, std::max(2, static_cast<int>(l.plot.width() / 140))), 1,
              "");
  p.text({l.plot.x0 - 10, x_tick_labels_middle(p, l.plot)}, "time (ms)", kDimText, TextSize::small, HAlign::right,
         VAlign::middle);

  // Zoomed in, spans and boundaries run past the plot: it cuts them.
  p.push_clip({l.plot.x0, l.plot.y0 - iteration_row(p), l.plot.x1 + 1, l.plot.y1});
  auto shown = [&](const TimelineSpan& s) { return l.x(s.end_us) >= l.plot.x0 - 1 && l.x(s.start_us) <= l.plot.x1; };
  // Stalls last, so nothing covers them.
  for (const TimelineSpan& span : scene.spans)
    if (!span.stall() && shown(span)) draw_span(p, l, span);
  for (const TimelineSpan& span : scene.spans)
    if (span.stall() && shown(span)) draw_span(p, l, span);
  draw_iteration_boundaries(p, l, scene);
  if (focus.hovered) {
    const Box r = visible(l, l.span_box(*focus.hovered));
    p.outline_rect({r.x0 - 2, r.y0 - 2, r.x1 + 2, r.y1 + 2}, kHighlight, 2);
    // A transfer's round trip: its other legs outlined too, each joined to
    // the hovered one, so an offload shows where its prefetch brought the
    // tensor back (and the other way round).
    for (const TimelineSpan* other : scene.round_trip(*focus.hovered)) {
      const Box o = visible(l, l.span_box(*other));
      if (o.x1 < o.x0) continue;  // outside the zoomed range
      p.outline_rect({o.x0 - 2, o.y0 - 2, o.x1 + 2, o.y1 + 2}, kHighlight, 1);
      if (o.y0 == r.y0) {  // the same lane (a compression beside its copy): joined across
        const float y = (r.y0 + r.y1) / 2, from = o.x0 > r.x1 ? r.x1 + 2 : r.x0 - 2, to = o.x0 > r.x1 ? o.x0 - 2 : o.x1 + 2;
        p.line({from, y}, {to, y}, kHighlight, 1);
        continue;
      }
      const bool below = o.y0 >= r.y1;
      p.line({(r.x0 + r.x1) / 2, below ? r.y1 + 2 : r.y0 - 2}, {(o.x0 + o.x1) / 2, below ? o.y0 - 2 : o.y1 + 2},
             kHighlight, 1);
    }
  }
  p.pop_clip();
}

}  // namespace tidepool::ui::paint
