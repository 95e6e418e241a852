#include "ui/comparison.h"

#include <imgui.h>

#include <algorithm>

namespace tidepool::ui {

void draw_comparison(Dashboard& a, Dashboard& b, float width, float height) {
  a.refresh();
  b.refresh();
  const Dashboard::Axes x = a.axes(), y = b.axes();
  const Dashboard::Axes shared{std::max(x.map_bytes, y.map_bytes), std::max(x.map_steps, y.map_steps),
                               std::max(x.load_bytes, y.load_bytes), std::max(x.load_samples, y.load_samples),
                               std::max(x.timeline_us, y.timeline_us)};
  a.share_axes(shared);
  b.share_axes(shared);
  float menu_height = 0;
  if (ImGui::BeginMainMenuBar()) {
    ImGui::TextDisabled("  Tidepool | comparing %s with %s, on the same axes", a.label().c_str(), b.label().c_str());
    menu_height = ImGui::GetWindowSize().y;
    ImGui::EndMainMenuBar();
  }
  const float band = std::max((height - menu_height) / 2, 1.0f);
  a.draw_views({0, menu_height, width, band});
  b.draw_views({0, menu_height + band, width, band});
}

}  // namespace tidepool::ui
