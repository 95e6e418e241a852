// Where each view sits in the window, as pure arithmetic on the window's
// size: the window places its views here every frame, and the gui test crops
// a screenshot with the same numbers to check what each view drew.
//
//   +-----------+--------------------------------------------+
//   | controls  | stream timeline                            |
//   |           +--------------------------+-----------------+
//   +-----------+ pool address map         | memory load     |
//   | stats     |                          |                 |
//   +-----------+--------------------------+-----------------+
#pragma once

#include <array>
#include <string_view>

namespace tidepool::ui {

struct Rect {
  float x = 0, y = 0, w = 0, h = 0;
};

enum class ViewId : int { controls, stats, timeline, address_map, memory_load };
inline constexpr int kViewCount = 5;
std::string_view view_title(ViewId v);  // the ImGui window title

struct Layout {
  std::array<Rect, kViewCount> views;
  const Rect& operator[](ViewId v) const { return views[static_cast<int>(v)]; }
};

// `menu_height`: the main menu bar's height at the top of the window.
Layout layout_for(float width, float height, float menu_height);
// The same arrangement inside `area` (one of two runs compared, stacked).
Layout layout_in(const Rect& area);

}  // namespace tidepool::ui
