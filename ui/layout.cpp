#include "ui/layout.h"

#include <algorithm>

namespace tidepool::ui {

std::string_view view_title(ViewId v) {
  switch (v) {
    case ViewId::controls: return "Controls";
    case ViewId::stats: return "Stats";
    case ViewId::timeline: return "Stream timeline";
    case ViewId::address_map: return "Pool address map";
    case ViewId::memory_load: return "Memory load";
  }
  return "?";
}

Layout layout_for(float width, float height, float menu_height) {
  return layout_in({0, menu_height, width, height - menu_height});
}

Layout layout_in(const Rect& area) {
  Layout l;
  const float top = area.y, left = area.x, width = area.w;
  const float body = std::max(area.h, 1.0f);
  const float side = std::clamp(width * 0.22f, 300.0f, 380.0f);  // controls and stats column
  const float controls_h = body * 0.58f;
  const float right = std::max(width - side, 1.0f);
  // The timeline's lanes need about 240 px: a short area (half of two runs
  // compared) gives it up to half its height rather than cut them.
  const float timeline_h = std::max(body * 0.34f, std::min(240.0f, body * 0.5f));
  const float map_w = right * 0.56f;
  auto set = [&](ViewId v, Rect r) { l.views[static_cast<int>(v)] = r; };
  set(ViewId::controls, {left, top, side, controls_h});
  set(ViewId::stats, {left, top + controls_h, side, body - controls_h});
  set(ViewId::timeline, {left + side, top, right, timeline_h});
  set(ViewId::address_map, {left + side, top + timeline_h, map_w, body - timeline_h});
  set(ViewId::memory_load, {left + side + map_w, top + timeline_h, right - map_w, body - timeline_h});
  return l;
}

}  // namespace tidepool::ui
