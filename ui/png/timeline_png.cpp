#include "ui/png/timeline_png.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include <opencv2/imgproc.hpp>

#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

using png::HAlign;
using png::VAlign;

constexpr const char* kTitle = "Stream timeline";
constexpr int kLeftMargin = 130;  // lane names
constexpr int kRightMargin = 24;
constexpr int kBottomMargin = 56;  // tick labels and the axis title
constexpr int kIterationRow = 22;  // iteration numbers above the lanes
constexpr int kLaneGap = 6;
constexpr std::array<Stream, 3> kLanes = {Stream::compute, Stream::offload, Stream::prefetch};
// A stall's outline: brighter than its fill so it stands out against the
// backward spans' red-orange.
constexpr std::uint32_t kStallOutline = 0xFF5A5A;

png::LegendEntries legend(const TimelineScene& scene) {
  png::LegendEntries entries = {
      {"forward", span_colour(SpanKind::forward)},
      {"backward", span_colour(SpanKind::backward)},
      {"accumulate", span_colour(SpanKind::accumulate)},
      {"update", span_colour(SpanKind::update)},
      {"offload D2H", span_colour(SpanKind::offload)},
      {"prefetch H2D", span_colour(SpanKind::prefetch)},
  };
  if (scene.compresses()) {
    entries.push_back({"compress (host)", span_colour(SpanKind::compress)});
    entries.push_back({"decompress (host)", span_colour(SpanKind::decompress)});
  }
  entries.push_back({"compute stall (hatched: waiting on a transfer)", span_colour(SpanKind::wait)});
  entries.push_back({"transfer stream waiting", png::shade(span_colour(SpanKind::wait), 0.45)});
  return entries;
}

const char* lane_name(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::offload: return "offload D2H";
    case Stream::prefetch: return "prefetch H2D";
  }
  return "?";
}

std::string ms(double us) { return png::format_fixed(us / 1000.0, us < 10000 ? 2 : 1) + " ms"; }

std::string title_of(const TimelineScene& scene) {
  std::string title = kTitle;
  if (!scene.iterations.empty()) {
    const auto first = scene.iterations.front().iteration, last = scene.iterations.back().iteration;
    title += first == last ? ": iteration " + std::to_string(first)
                           : ": iterations " + std::to_string(first) + "-" + std::to_string(last);
    double stall = 0;
    for (const TimelineIteration& it : scene.iterations) stall += it.stall_us;
    title += "  |  compute stalled " + ms(stall) + " of " + ms(scene.end_us - scene.start_us);
  }
  return title;
}

// One span's rectangle, drawn as its kind says. Stalls take the whole lane
// and are drawn last, so nothing covers them.
void draw_span(cv::Mat& image, const TimelineLayout& layout, const TimelineSpan& span) {
  const cv::Rect lane = layout.lane(span.lane);
  const double x0 = layout.x(span.start_us), x1 = std::max(layout.x(span.end_us), x0 + 1);
  if (span.stall()) {
    // The compute stream doing nothing: a dark gap hatched in red, so it
    // reads as idle time rather than as one more (red-orange) backward
    // span. Too narrow to hatch, it is solid red.
    const std::uint32_t red = span_colour(SpanKind::wait);
    const cv::Rect r(cv::Point(static_cast<int>(std::floor(x0)), lane.y),
                     cv::Point(static_cast<int>(std::ceil(x1)), lane.y + lane.height));
    if (r.width < 6) {
      png::fill_rect(image, x0, lane.y, x1, lane.y + lane.height, red);
      return;
    }
    png::fill_rect(image, r.x, r.y, r.x + r.width, r.y + r.height, png::shade(red, 0.3));
    png::hatch(image, r, red, 7, 2);
    cv::rectangle(image, r, png::bgr(kStallOutline), 2, cv::LINE_8);
    // Its length where it fits, on a patch that keeps it readable over the hatching.
    const std::string label = "stall " + ms(span.duration_us());
    const cv::Size size = png::text_size(label, png::kSmallText);
    if (size.width + 12 <= r.width && size.height + 12 <= r.height) {
      const cv::Point centre(r.x + r.width / 2, r.y + r.height / 2);
      png::fill_rect(image, centre.x - size.width / 2 - 3, centre.y - size.height / 2 - 4,
                     centre.x + size.width / 2 + 3, centre.y + size.height / 2 + 4, png::kPlotBackground);
      png::put_text(image, label, centre, png::kSmallText, png::kText, HAlign::centre, VAlign::middle);
    }
    return;
  }
  // A transfer stream waiting on compute is idle, not a stall: drawn
  // dimmed and thin.
  const bool idle = span.kind == SpanKind::wait;
  const std::uint32_t fill = idle ? png::shade(span_colour(SpanKind::wait), 0.45) : span_colour(span.kind);
  const int inset = idle ? lane.height / 3 : 4;
  png::fill_rect(image, x0, lane.y + inset, x1, lane.y + lane.height - inset, fill);
  if (idle) return;
  // The label, where it fits inside the span.
  const std::string label = span.label();
  const cv::Size size = png::text_size(label, png::kSmallText);
  if (size.width + 6 <= x1 - x0 && size.height + 6 <= lane.height - 2 * inset)
    png::put_text(image, label, {static_cast<int>((x0 + x1) / 2), lane.y + lane.height / 2}, png::kSmallText,
                  png::is_light(fill) ? png::kDarkText : png::kText, HAlign::centre, VAlign::middle);
}

void draw_iteration_boundaries(cv::Mat& image, const TimelineLayout& layout, const TimelineScene& scene) {
  const int top = layout.plot.y - kIterationRow + 4, bottom = layout.plot.y + layout.plot.height;
  for (std::size_t i = 0; i < scene.iterations.size(); ++i) {
    const TimelineIteration& it = scene.iterations[i];
    const int x = layout.x.px(it.start_us);
    cv::line(image, {x, top}, {x, bottom}, png::bgr(png::kText), 1, cv::LINE_8);
    // The number, with the iteration's stall time where there is room up to
    // the next boundary.
    const int next = i + 1 < scene.iterations.size() ? layout.x.px(scene.iterations[i + 1].start_us)
                                                      : layout.x.px(it.end_us);
    std::string label = "it " + std::to_string(it.iteration);
    if (it.stall_us > 0) {
      const std::string longer = label + "  stall " + ms(it.stall_us);
      if (png::text_size(longer, png::kSmallText).width + 8 < next - x) label = longer;
    }
    if (png::text_size(label, png::kSmallText).width + 8 < std::max(next - x, 40))
      png::put_text(image, label, {x + 4, top}, png::kSmallText, png::kText, HAlign::left, VAlign::top);
  }
  if (!scene.iterations.empty()) {
    const int x = layout.x.px(scene.iterations.back().end_us);
    png::dashed_line(image, {x, top}, {x, bottom}, png::kText);
  }
}

}  // namespace

cv::Rect TimelineLayout::lane(Stream s) const {
  const int index = static_cast<int>(s);
  const int height = (plot.height - 2 * kLaneGap) / 3;
  return {plot.x, plot.y + index * (height + kLaneGap), plot.width, height};
}

TimelineLayout timeline_layout(const TimelineScene& scene, int width, int height) {
  TimelineLayout layout;
  const int top = png::title_bottom() + png::legend_room(width, height, legend(scene)) + 6 + kIterationRow;
  layout.plot = cv::Rect(kLeftMargin, top, std::max(1, width - kLeftMargin - kRightMargin),
                         std::max(3 * 8 + 2 * kLaneGap, height - top - kBottomMargin));
  const double end = scene.end_us > scene.start_us ? scene.end_us : scene.start_us + 1;
  layout.x = {scene.start_us, end, static_cast<double>(layout.plot.x),
              static_cast<double>(layout.plot.x + layout.plot.width)};
  return layout;
}

cv::Mat draw_timeline(const TimelineScene& scene, int width, int height) {
  cv::Mat image = png::new_canvas(width, height);
  if (scene.empty()) {
    png::draw_no_events(image, kTitle);
    return image;
  }
  const TimelineLayout layout = timeline_layout(scene, width, height);
  png::draw_title(image, title_of(scene));
  png::draw_legend_below_title(image, legend(scene));

  for (Stream s : kLanes) {
    const cv::Rect lane = layout.lane(s);
    png::fill_rect(image, lane.x, lane.y, lane.x + lane.width, lane.y + lane.height, png::kPlotBackground);
    png::put_text(image, lane_name(s), {lane.x - 10, lane.y + lane.height / 2}, png::kLabelText, png::kText,
                  HAlign::right, VAlign::middle);
  }
  // The time axis in ms from the first event shown; its grid lies under the spans.
  const double duration_ms = (layout.x.d1 - layout.x.d0) / 1000.0;
  const png::LinearScale x_ms{0, duration_ms, layout.x.r0, layout.x.r1};
  png::draw_x_axis(image, layout.plot, x_ms, png::nice_ticks(0, duration_ms, std::max(2, width / 140)), 1,
                   "time (ms)");

  for (const TimelineSpan& span : scene.spans)
    if (!span.stall()) draw_span(image, layout, span);
  for (const TimelineSpan& span : scene.spans)
    if (span.stall()) draw_span(image, layout, span);
  draw_iteration_boundaries(image, layout, scene);
  return image;
}

}  // namespace tidepool::ui
