#include "ui/views/timeline_view.h"

#include <algorithm>
#include <cmath>

#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

constexpr float kLabelWidth = 96;
constexpr float kAxisHeight = 18;
const char* kLaneNames[kStreamCount] = {"compute", "offload D2H", "prefetch H2D"};

// A tick step of 1, 2 or 5 times a power of ten giving about `count` ticks.
double nice_step(double span, int count) {
  const double raw = span / std::max(count, 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

}  // namespace

void TimelineView::draw(const Frame& frame) {
  const TimelineScene& scene = frame.timeline;
  ImGui::Checkbox("follow newest", &follow_);
  ImGui::SameLine();
  ImGui::TextDisabled("wheel: zoom, drag: pan | stalls: %s in the last iteration",
                      frame.timeline.iterations.empty()
                          ? "-"
                          : duration_text(frame.timeline.iterations.back().stall_us).c_str());
  for (SpanKind k : {SpanKind::forward, SpanKind::backward, SpanKind::update, SpanKind::offload,
                     SpanKind::prefetch, SpanKind::compress, SpanKind::decompress, SpanKind::wait}) {
    const bool host_work = k == SpanKind::compress || k == SpanKind::decompress;
    if (host_work && !scene.compresses()) continue;
    legend_item(span_colour(k), k == SpanKind::wait ? "stall" : to_string(k));
  }
  if (scene.empty()) {
    waiting_text(frame.status);
    return;
  }
  const Canvas c = begin_canvas("timeline");
  const float plot_x0 = c.min.x + kLabelWidth, plot_w = std::max(c.width() - kLabelWidth, 10.0f);
  const float lane_h = (c.height() - kAxisHeight) / kStreamCount;

  if (follow_) {
    view_start_us_ = scene.start_us;
    view_span_us_ = std::max(scene.end_us - scene.start_us, 1.0);
  }
  ImGuiIO& io = ImGui::GetIO();
  if (c.hovered && io.MouseWheel != 0) {  // zoom around the pointer
    const double at = view_start_us_ + (io.MousePos.x - plot_x0) / plot_w * view_span_us_;
    const double factor = std::pow(0.8, io.MouseWheel);
    view_span_us_ = std::clamp(view_span_us_ * factor, 5.0, 1e12);
    view_start_us_ = at - (io.MousePos.x - plot_x0) / plot_w * view_span_us_;
    follow_ = false;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    view_start_us_ -= io.MouseDelta.x / plot_w * view_span_us_;
    follow_ = false;
  }
  auto x_of = [&](double us) { return plot_x0 + static_cast<float>((us - view_start_us_) / view_span_us_ * plot_w); };

  ImDrawList* d = c.draw;
  for (int lane = 0; lane < kStreamCount; ++lane) {
    const float y = c.min.y + lane * lane_h;
    d->AddRectFilled({c.min.x, y}, {c.max.x, y + lane_h},
                     lane % 2 ? IM_COL32(34, 34, 40, 255) : IM_COL32(28, 28, 33, 255));
    d->AddText({c.min.x + 6, y + lane_h * 0.5f - 7}, IM_COL32(220, 220, 220, 255), kLaneNames[lane]);
  }
  d->PushClipRect({plot_x0, c.min.y}, c.max, true);
  // Iteration boundaries under the spans.
  for (const TimelineIteration& it : scene.iterations) {
    const float x = x_of(it.start_us);
    d->AddLine({x, c.min.y}, {x, c.max.y - kAxisHeight}, IM_COL32(120, 120, 140, 255));
    char label[32];
    std::snprintf(label, sizeof label, "iteration %lld", static_cast<long long>(it.iteration));
    d->AddText({x + 3, c.max.y - kAxisHeight - 14}, IM_COL32(150, 150, 170, 255), label);
  }
  const TimelineSpan* hovered = nullptr;
  for (const TimelineSpan& s : scene.spans) {
    float x0 = x_of(s.start_us), x1 = x_of(s.end_us);
    if (x1 < plot_x0 || x0 > c.max.x) continue;
    x1 = std::max(x1, x0 + 1.0f);
    const int lane = static_cast<int>(s.lane);
    const float y0 = c.min.y + lane * lane_h + 3, y1 = y0 + lane_h - 6;
    d->AddRectFilled({x0, y0}, {x1, y1}, im_colour(span_colour(s.kind)));
    if (s.stall()) d->AddRect({x0, y0 - 2}, {x1, y1 + 2}, IM_COL32(255, 60, 60, 255), 0, 0, 2.0f);
    if (x1 - x0 > 40) {
      const std::string label = s.label();
      if (ImGui::CalcTextSize(label.c_str()).x < x1 - x0 - 4) {
        d->AddText({x0 + 2, y0 + 2}, IM_COL32(10, 10, 10, 255), label.c_str());
      }
    }
    if (c.hovered && io.MousePos.x >= x0 && io.MousePos.x <= x1 && io.MousePos.y >= y0 && io.MousePos.y <= y1)
      hovered = &s;
  }
  // Time axis, in ms from the first span shown.
  const double step = nice_step(view_span_us_, 8);
  for (double t = std::ceil((view_start_us_ - scene.start_us) / step) * step;
       t <= view_start_us_ - scene.start_us + view_span_us_; t += step) {
    const float x = x_of(scene.start_us + t);
    d->AddLine({x, c.max.y - kAxisHeight}, {x, c.max.y - kAxisHeight + 4}, IM_COL32(180, 180, 180, 255));
    d->AddText({x + 2, c.max.y - kAxisHeight + 2}, IM_COL32(180, 180, 180, 255), duration_text(t).c_str());
  }
  d->PopClipRect();

  if (hovered) {
    ImGui::BeginTooltip();
    ImGui::Text("%s", hovered->label().c_str());
    ImGui::Separator();
    ImGui::Text("stream    %s", kLaneNames[static_cast<int>(hovered->lane)]);
    if (!hovered->layer.empty()) ImGui::Text("layer     %s", hovered->layer.c_str());
    if (!hovered->tensor.empty()) ImGui::Text("tensor    %s", hovered->tensor.c_str());
    if (hovered->bytes) ImGui::Text("bytes     %s", format_bytes(hovered->bytes).c_str());
    ImGui::Text("duration  %s", duration_text(hovered->duration_us()).c_str());
    ImGui::Text("iteration %lld, step %d", static_cast<long long>(hovered->iteration), hovered->step);
    if (hovered->stall()) ImGui::TextColored({1, 0.4f, 0.4f, 1},
                         "compute stalled on this transfer: its data, or the memory it frees");
    ImGui::EndTooltip();
  }
}

}  // namespace tidepool::ui
