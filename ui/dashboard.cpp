#include "ui/dashboard.h"

#include <imgui.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ui/paint/address_map_picture.h"
#include "ui/paint/memory_load_picture.h"

namespace tidepool::ui {
namespace {

// New events are turned into scenes at most this often: the copy and the
// scene building cost milliseconds on a deep network, and a picture that
// changes five times a second reads as live.
constexpr auto kRefreshInterval = std::chrono::milliseconds(200);
// Iterations the timeline shows, and whose per-step load the curves show.
constexpr int kTimelineIterations = 2;
constexpr int kLoadIterations = 3;

}  // namespace

Dashboard::Dashboard(SessionLink& link, std::string label) : link_(link), label_(std::move(label)) {}


Dashboard::Axes Dashboard::shown_axes() const {
  return {paint::address_map_top(map_), std::max(map_.steps, map_.axis_steps), paint::memory_load_top(load_),
          std::max(load_.points.size(), load_.axis_samples),
          std::max(timeline_.end_us - timeline_.start_us, timeline_.axis_us)};
}

void Dashboard::share_axes(const Axes& a) {
  map_.axis_bytes = a.map_bytes;
  map_.axis_steps = a.map_steps;
  load_.axis_bytes = a.load_bytes;
  load_.axis_samples = a.load_samples;
  timeline_.axis_us = a.timeline_us;
}

void Dashboard::show_rank(int rank) {
  if (rank == rank_) return;
  rank_ = rank;
  version_ = ~std::uint64_t{0};  // another rank's events: copy them at the next frame
  refreshed_ = {};
}

void Dashboard::refresh() {
  status_ = link_.status();
  const auto now = std::chrono::steady_clock::now();
  const std::uint64_t version = link_.events_version(rank_);
  if (version == version_ || now - refreshed_ < kRefreshInterval) return;
  refreshed_ = now;
  events_ = link_.events(rank_);
  version_ = events_.version;
  // A recorded run kept a few iterations (--trace-iterations): the timeline
  // and the load curves show every one, so zoom and pan reach each, as in a
  // profiler's capture. A live one shows the latest.
  const int recorded = link_.read_only() ? static_cast<int>(events_.iterations.size()) : 0;
  timeline_ = build_timeline(events_, std::max(kTimelineIterations, recorded));
  map_ = build_address_map(events_, status_.memory.pool_bytes);
  load_ = build_memory_load(events_, status_.memory.pool_bytes, std::max(kLoadIterations, recorded),
                            status_.settings.batch_size, status_.memory.load_limit_bytes, status_.computes_values);
  stats_ = build_stats(events_, timeline_, status_.memory.pinned_bytes);
  stalls_ = iteration_stalls(events_);
  // Once per new copy, not per frame: the map's top reads every block (a
  // 10^6-event snapshot's half a million).
  axes_ = {paint::address_map_own_top(map_), map_.steps, paint::memory_load_own_top(load_), load_.points.size(),
           timeline_.end_us - timeline_.start_us};
}

void Dashboard::draw(float width, float height) {
  refresh();
  float menu_height = 0;
  if (ImGui::BeginMainMenuBar()) {
    if (ImGui::BeginMenu("Scenarios")) {
      ImGui::MenuItem("Fragmentation: the papers' sequences through every heuristic", nullptr, &show_fragmentation_);
      // The overlap scenario trains its own network: a recorded run has
      // no training to replace.
      const bool read_only = link_.read_only();
      ImGui::MenuItem("Overlap: sync vs async transfers on a throttled link", nullptr, &show_overlap_, !read_only);
      if (read_only && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("trains a network of its own: open it in a live window, not on a recorded run");
      ImGui::EndMenu();
    }
    // A data-parallel run: whose events the views show. The settings and
    // controls stay rank 0's, which every rank follows.
    const std::vector<int> ranks = link_.event_ranks();
    const int run_ranks = status_.settings.memory.ranks;
    if (run_ranks > 1 && ImGui::BeginMenu(("Rank " + std::to_string(rank_)).c_str())) {
      for (int r : ranks) {
        const std::string item = "rank " + std::to_string(r) + (r == 0 ? " (this process: its settings for all)" : "");
        if (ImGui::MenuItem(item.c_str(), nullptr, r == rank_)) show_rank(r);
      }
      if (static_cast<int>(ranks.size()) < run_ranks)
        ImGui::TextDisabled("%d of %d ranks' events are here (the others' are on their machines)",
                            static_cast<int>(ranks.size()), run_ranks);
      ImGui::EndMenu();
    }
    const std::string rank_text =
        run_ranks > 1 ? " | rank " + std::to_string(rank_) + " of " + std::to_string(run_ranks) : "";
    if (status_.state == RunState::snapshot) {
      ImGui::TextDisabled("  Tidepool | PyTorch snapshot %s | %s | placed by %s%s", status_.dataset_name.c_str(),
                          status_.device.c_str(), status_.settings.memory.heuristic.c_str(),
                          status_.replanning ? " (placing again...)" : "");
    } else {
      ImGui::TextDisabled("  Tidepool | %s on %s, batch %lld | %s%s%s", status_.settings.model.c_str(),
                          status_.dataset_name.c_str(), static_cast<long long>(status_.settings.batch_size),
                          status_.device.c_str(), rank_text.c_str(),
                          link_.read_only() ? " | recorded run, read only" : "");
    }
    menu_height = ImGui::GetWindowSize().y;
    ImGui::EndMainMenuBar();
  }

  draw_views({0, menu_height, width, height - menu_height});

  // Scenario windows float above the views.
  if (show_fragmentation_) {
    ImGui::SetNextWindowSize({width * 0.7f, height * 0.75f}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowPos({width * 0.15f, height * 0.12f}, ImGuiCond_FirstUseEver);
    if (ImGui::Begin("Scenario: fragmentation", &show_fragmentation_)) fragmentation_view_.draw();
    ImGui::End();
  }
  if (show_overlap_) {
    ImGui::SetNextWindowSize({520, 330}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowPos({width - 540, menu_height + 30}, ImGuiCond_FirstUseEver);
    if (ImGui::Begin("Scenario: overlap", &show_overlap_)) overlap_view_.draw(frame());
    ImGui::End();
  }
}

void Dashboard::draw_views(const Rect& area) {
  const Layout layout = layout_in(area);
  const Frame frame = this->frame();
  auto view = [&](ViewId id, auto& v) {
    const Rect& r = layout[id];
    ImGui::SetNextWindowPos({r.x, r.y}, ImGuiCond_Always);
    ImGui::SetNextWindowSize({r.w, r.h}, ImGuiCond_Always);
    // Compared runs' views are told apart by title (and ImGui by "###").
    const std::string name(view_title(id));
    const std::string title = label_.empty() ? name : name + " | " + label_ + "###" + label_ + name;
    if (ImGui::Begin(title.c_str(), nullptr,
                     ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                         ImGuiWindowFlags_NoBringToFrontOnFocus))
      v.draw(frame);
    ImGui::End();
  };
  view(ViewId::controls, controls_);
  view(ViewId::stats, stats_view_);
  view(ViewId::timeline, timeline_view_);
  view(ViewId::address_map, address_map_view_);
  view(ViewId::memory_load, memory_load_view_);
}

}  // namespace tidepool::ui
