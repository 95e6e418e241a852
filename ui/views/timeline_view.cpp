#include "ui/views/timeline_view.h"

#include <algorithm>
#include <cmath>

#include "ui/paint/timeline_picture.h"
#include "ui/scene/iteration_number.h"

namespace tidepool::ui {
namespace {

void span_tooltip(const TimelineSpan& s) {
  ImGui::BeginTooltip();
  ImGui::Text("%s", s.label().c_str());
  ImGui::Separator();
  ImGui::Text("stream    %s", paint::lane_name(s.lane));
  if (!s.layer.empty()) ImGui::Text("layer     %s", s.layer.c_str());
  if (!s.tensor.empty()) ImGui::Text("tensor    %s", s.tensor.c_str());
  if (s.bytes) ImGui::Text("bytes     %s", format_bytes(s.bytes).c_str());
  ImGui::Text("duration  %s", duration_text(s.duration_us()).c_str());
  ImGui::Text("iteration %lld, step %d", static_cast<long long>(shown_iteration(s.iteration)), s.step);
  if (s.stall()) ImGui::TextColored({1, 0.4f, 0.4f, 1}, "compute stalled on this transfer: its data, or the memory it frees");
  ImGui::EndTooltip();
}

}  // namespace

void TimelineView::draw(const Frame& frame) {
  const TimelineScene& scene = frame.timeline;
  ImGui::Checkbox("follow newest", &follow_);
  ImGui::SameLine();
  ImGui::TextDisabled("wheel: zoom, drag: pan");
  if (scene.empty()) {
    waiting_text(frame.status);
    return;
  }
  const Canvas c = begin_canvas("timeline");
  paint::ImGuiPainter painter(c.draw);
  if (follow_) {
    view_start_us_ = scene.start_us;
    view_span_us_ = std::max({scene.end_us - scene.start_us, scene.axis_us, 1.0});
  }
  // The plot's position and scale before this frame's zoom and pan, to turn
  // the pointer into time.
  paint::TimelineFocus focus{view_start_us_, view_start_us_ + view_span_us_};
  const paint::TimelineLayout before = paint::timeline_layout(painter, scene, c.area(), focus);
  const float plot_x0 = before.plot.x0, plot_w = std::max(before.plot.width(), 1.0f);
  ImGuiIO& io = ImGui::GetIO();
  if (c.hovered && io.MouseWheel != 0) {  // zoom around the pointer
    const double at = view_start_us_ + (io.MousePos.x - plot_x0) / plot_w * view_span_us_;
    view_span_us_ = std::clamp(view_span_us_ * std::pow(0.8, io.MouseWheel), 5.0, 1e12);
    view_start_us_ = at - (io.MousePos.x - plot_x0) / plot_w * view_span_us_;
    follow_ = false;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    view_start_us_ -= io.MouseDelta.x / plot_w * view_span_us_;
    follow_ = false;
  }
  focus = {view_start_us_, view_start_us_ + view_span_us_};
  const paint::TimelineLayout layout = paint::timeline_layout(painter, scene, c.area(), focus);
  const paint::Point mouse{io.MousePos.x, io.MousePos.y};
  if (c.hovered && layout.plot.contains(mouse))
    for (const TimelineSpan& s : scene.spans)  // spans of one lane do not overlap
      if (layout.span_box(s).contains(mouse)) focus.hovered = &s;
  paint::draw_timeline(painter, scene, c.area(), focus);
  if (focus.hovered) span_tooltip(*focus.hovered);
}

}  // namespace tidepool::ui
