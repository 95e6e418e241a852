// What every view gets each frame, and the small ImGui helpers they share.
// Views read the frame and write settings requests through the link; none
// of them touches the engine's objects. The timeline, address map and
// memory-load pictures are drawn by ui/paint/, the same functions the PNGs
// use: their views add only what is interactive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <imgui.h>

#include "engine/core/bytes_text.h"
#include "engine/observe/sinks/ring_sink.h"
#include "ui/paint/imgui_painter.h"  // im_colour, and the painter the pictures are drawn with
#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/stats.h"
#include "engine/plan/memory_facts.h"  // park_horizon_text
#include "ui/scene/stats_table.h"
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
  int rank = 0;  // whose events these are (a data-parallel run's ranks; rank 0's status)
};

std::string duration_text(double us);  // "850 us", "12.4 ms", "1.20 s"

// A drawing area filling the rest of the window, with mouse input captured
// (so dragging it does not move the window).
struct Canvas {
  ImVec2 min, max;
  ImDrawList* draw = nullptr;
  bool hovered = false;
  float width() const { return max.x - min.x; }
  float height() const { return max.y - min.y; }
  paint::Box area() const { return {min.x, min.y, max.x, max.y}; }
};
Canvas begin_canvas(const char* id, ImVec2 size = {0, 0});

// The greyed-out message views show before there is anything to draw.
void waiting_text(const SessionStatus& status);

}  // namespace tidepool::ui
