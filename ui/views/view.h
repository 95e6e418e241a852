// What every view gets each frame, and the small drawing helpers they
// share. Views read the frame and write settings requests through the
// link; none of them touches the engine's objects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <imgui.h>

#include "engine/core/bytes_text.h"
#include "engine/observe/sinks/ring_sink.h"
#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/stats.h"
#include "ui/scene/timeline.h"
#include "ui/session_link.h"

namespace tidepool::ui {

struct Frame {
  const SessionStatus& status;
  const RingSnapshot& events;
  const TimelineScene& timeline;
  const AddressMapScene& map;
  const MemoryLoadScene& load;
  const IterationStats& stats;
  const std::vector<TimelineIteration>& stalls;  // every iteration in the snapshot
  SessionLink& link;
};

// 0xRRGGBB to ImGui's packed colour.
inline ImU32 im_colour(std::uint32_t rgb, float alpha = 1.0f) {
  return IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, static_cast<int>(alpha * 255.0f));
}
std::string duration_text(double us);  // "850 us", "12.4 ms", "1.20 s"

// Text on a plot, over a dark plate so it stays readable on any rectangle.
void plot_label(ImDrawList* d, ImVec2 at, ImU32 colour, const std::string& text);

// A drawing area filling the rest of the window, with mouse input captured
// (so dragging it does not move the window).
struct Canvas {
  ImVec2 min, max;
  ImDrawList* draw = nullptr;
  bool hovered = false;
  float width() const { return max.x - min.x; }
  float height() const { return max.y - min.y; }
};
Canvas begin_canvas(const char* id, ImVec2 size = {0, 0});

// One entry of a legend: a colour swatch and its name, on the current line
// (after whatever came before it) while it fits, else at the start of the
// next, so a legend wraps in a narrow window instead of running off it.
void legend_item(std::uint32_t rgb, const std::string& name);

// What async offloads do with the blocks they free, for a park horizon
// (SessionStatus::park_horizon): "parked until needed", "up to 2 parked at
// once" or "reused at once".
std::string freed_blocks_text(int park_horizon);

// The greyed-out message views show before there is anything to draw.
void waiting_text(const SessionStatus& status);

}  // namespace tidepool::ui
