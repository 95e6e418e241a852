#include "ui/views/view.h"

#include <algorithm>
#include <cstdio>

namespace tidepool::ui {

std::string duration_text(double us) {
  char text[32];
  if (us < 1000) std::snprintf(text, sizeof text, "%.0f us", us);
  else if (us < 1e6) std::snprintf(text, sizeof text, "%.2f ms", us * 1e-3);
  else std::snprintf(text, sizeof text, "%.2f s", us * 1e-6);
  return text;
}

Canvas begin_canvas(const char* id, ImVec2 size) {
  Canvas c;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;
  size.x = std::max(size.x, 50.0f);
  size.y = std::max(size.y, 50.0f);
  c.min = ImGui::GetCursorScreenPos();
  c.max = {c.min.x + size.x, c.min.y + size.y};
  ImGui::InvisibleButton(id, size, ImGuiButtonFlags_MouseButtonLeft);
  c.hovered = ImGui::IsItemHovered();
  c.draw = ImGui::GetWindowDrawList();
  c.draw->AddRectFilled(c.min, c.max, IM_COL32(24, 24, 28, 255));
  return c;
}

void waiting_text(const SessionStatus& status) {
  const char* what = status.state == RunState::failed     ? "training failed (see Controls)"
                     : status.state == RunState::diverged ? "training diverged (see Controls)"
                     : status.state == RunState::starting ? "planning and placing the network..."
                     : status.state == RunState::snapshot ? "a memory snapshot records allocations only: nothing to show here"
                                                           : "waiting for the first iteration...";
  ImGui::TextDisabled("%s", what);
}

}  // namespace tidepool::ui
