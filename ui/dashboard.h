// Everything the window shows in one frame: the main menu (teaching
// scenarios), the five views at their layout positions and the scenario
// windows. It copies the session's events at most a few times a second,
// when there are new ones, and builds the scenes from that copy; views draw
// the scenes every frame. On a data-parallel run the copy is one rank's,
// chosen in the Ranks menu; the status and the controls are rank 0's,
// whose settings every rank follows.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ui/layout.h"
#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/stats.h"
#include "ui/scene/stats_table.h"
#include "ui/scene/timeline.h"
#include "ui/session_link.h"
#include "ui/views/address_map_view.h"
#include "ui/views/controls_view.h"
#include "ui/views/fragmentation_view.h"
#include "ui/views/memory_load_view.h"
#include "ui/views/overlap_view.h"
#include "ui/views/stats_view.h"
#include "ui/views/timeline_view.h"

namespace tidepool::ui {

class Dashboard {
 public:
  // `label`: where two runs are compared (`tidepool view A B`), what this
  // one is called in its views' titles ("A: runs/base"); "" alone.
  explicit Dashboard(SessionLink& link, std::string label = "");
  // Draws one frame into the current ImGui frame.
  void draw(float width, float height);
  // Two runs compared (ui/comparison.h): the events copied and the scenes
  // built as draw() does, then the views drawn in `area`, under no menu.
  void refresh();
  void draw_views(const Rect& area);
  // The axes this run's pictures need, and the ones both runs share
  // (the larger of each): the same bytes and steps at the same place.
  struct Axes {
    std::size_t map_bytes = 0;
    int map_steps = 0;
    std::size_t load_bytes = 0;
    std::size_t load_samples = 0;
    double timeline_us = 0;
  };
  const Axes& axes() const { return axes_; }
  // The axes the pictures were last drawn on (axes() with what was shared).
  Axes shown_axes() const;
  void share_axes(const Axes& axes);
  const std::string& label() const { return label_; }
  SessionLink& link() const { return link_; }
  // Every view has drawn data from a finished iteration.
  // (Running the overlap scenario: once the link it sets is in use.)
  // A snapshot has no stream work, so no timeline: the map and the load
  // curves are all it shows.
  bool showing_live_data() const {
    const bool timeline = !timeline_.empty() || status_.state == RunState::snapshot;
    return timeline && !map_.empty() && !load_.empty() && (!overlap_adopted_ || overlap_view_.settled());
  }
  // The figures of the iteration the Stats view shows (what a screenshot
  // records besides its pixels).
  const IterationStats& shown() const { return stats_; }
  // The address map as drawn last (what a screenshot records of it), and
  // the block pinned in it (null: none).
  const AddressMapScene& shown_map() const { return map_; }
  const MapBlock* pinned_block() const { return address_map_view_.pinned(map_); }
  // The Stats view's rows as it drew them last.
  std::vector<StatsRow> shown_table() const { return stats_table(status_, stats_, rank_); }
  // A data-parallel run: the rank whose timeline, address map and load
  // curves the views show (the Ranks menu changes it); rank 0 until one
  // of the link's event_ranks() is chosen.
  void show_rank(int rank);
  int shown_rank() const { return rank_; }
  // For screenshots of the scenarios.
  // `events`: how many of the scenario's events it opens with played.
  void show_fragmentation(bool on, int events = 0) {
    show_fragmentation_ = on;
    fragmentation_view_.play_to(events);
  }
  // The session runs the overlap scenario's settings: show it, and let it
  // set the link after the first iteration.
  void adopt_overlap_scenario() {
    show_overlap_ = overlap_adopted_ = true;
    overlap_view_.adopt();
  }

 private:
  Frame frame() const { return {status_, events_, timeline_, map_, load_, stats_, stalls_, link_, rank_}; }

  SessionLink& link_;
  std::string label_;
  int rank_ = 0;
  SessionStatus status_;
  RingSnapshot events_;
  std::uint64_t version_ = ~std::uint64_t{0};
  std::chrono::steady_clock::time_point refreshed_{};
  TimelineScene timeline_;
  AddressMapScene map_;
  MemoryLoadScene load_;
  IterationStats stats_;
  std::vector<TimelineIteration> stalls_;
  Axes axes_;  // what the scenes need, made with them

  ControlsView controls_;
  StatsView stats_view_;
  TimelineView timeline_view_;
  AddressMapView address_map_view_;
  MemoryLoadView memory_load_view_;
  FragmentationView fragmentation_view_;
  OverlapView overlap_view_;
  bool show_fragmentation_ = false, show_overlap_ = false;
  bool overlap_adopted_ = false;  // the session was started on the overlap scenario
};

}  // namespace tidepool::ui
