#include "ui/views/overlap_view.h"

#include <algorithm>
#include <cfloat>
#include <cstdio>

#include "ui/scene/overlap.h"

namespace tidepool::ui {
namespace {

constexpr const char* kModel = OverlapScenario::model;

}  // namespace

void OverlapView::start(SessionLink& link) {
  link.restart(overlap_run(link.status().settings, TransferMode::sync, link_gbps_));
  calibrating_ = true;
}

void OverlapView::adopt() { calibrating_ = true; }

void OverlapView::draw(const Frame& frame) {
  const SessionStatus& s = frame.status;
  ImGui::TextWrapped(
      "vDNN++'s constructed network (Table III) with every layer's input offloaded to pinned host memory "
      "over a throttled link. With synchronous transfers (vDNN) each layer waits for its copies: the "
      "compute lane of the timeline shows red stalls. Switch to asynchronous transfers (vDNN++): the "
      "next layer starts at once and backward's prefetches run ahead under compute, so the backward "
      "stalls shrink. In forward, a pool as small as the settings allow reuses the memory an offload "
      "frees at once, and that reuse waits for the copy. Give the pool a little room (the button "
      "names how much) and a few freed blocks stay parked while their copies run: the forward "
      "stalls go. More room parks every one until it is needed, and tensors still parked come back "
      "without a copy: memory bought for time. The numbers trained are the same every way.");
  const bool running_it = s.settings.model == kModel;
  if (ImGui::Button(running_it ? "Restart the scenario (sync)" : "Start: vDNN++ constructed network, sync"))
    start(frame.link);
  if (!running_it) {
    ImGui::TextDisabled("(training %s now; starting replaces it)", s.settings.model.c_str());
    return;
  }
  // The first iteration measured how fast this machine computes: set the
  // link so that the copies take a little over half of that.
  // (The scenes refresh a few times a second: keep asking until the
  // iteration is on show.)
  if (!frame.timeline.iterations.empty()) shown_ = frame.timeline.iterations.back().iteration;
  if (calibrating_ && s.iteration >= 1)
    if (const auto gbps = overlap_link_gbps(frame.timeline)) {
      link_gbps_ = static_cast<float>(*gbps);
      frame.link.request(overlap_settings(s.settings.memory, s.settings.memory.transfer, link_gbps_, s.settings.memory.budget_bytes));
      calibrating_ = false;
      settles_at_ = s.iteration + 1;  // applied at the boundary after the iteration under way
    }
  ImGui::SameLine();
  if (ImGui::Button("sync (vDNN)")) frame.link.request(overlap_settings(s.settings.memory, TransferMode::sync, link_gbps_));
  ImGui::SameLine();
  if (ImGui::Button("async (vDNN++)"))
    frame.link.request(overlap_settings(s.settings.memory, TransferMode::async, link_gbps_));
  if (s.settings.memory.transfer == TransferMode::async && s.memory.parking_pool_bytes > 0) {
    ImGui::SameLine();
    const std::string label = "async, room to park more (" + format_bytes(s.memory.parking_pool_bytes) + ")";
    if (ImGui::Button(label.c_str()))
      frame.link.request(overlap_settings(s.settings.memory, TransferMode::async, link_gbps_, s.memory.parking_pool_bytes));
  }
  ImGui::SetNextItemWidth(160);
  if (ImGui::SliderFloat("link GB/s", &link_gbps_, 0.1f, 16.0f, "%.2f GB/s", ImGuiSliderFlags_Logarithmic))
    calibrating_ = false;
  ImGui::SameLine();
  if (ImGui::SmallButton("set link")) frame.link.request(overlap_settings(s.settings.memory, s.settings.memory.transfer, link_gbps_, s.settings.memory.budget_bytes));
  char link[32] = "unthrottled";
  if (s.settings.memory.link_gbps > 0) std::snprintf(link, sizeof link, "%.2f GB/s", s.settings.memory.link_gbps);
  const std::string parking =
      s.settings.memory.transfer == TransferMode::sync ? "" : ", " + std::string(fact_info(MemoryFact::park_horizon).label) + ": " + park_horizon_text(s.memory.park_horizon);
  ImGui::TextWrapped("now: %s transfers%s, pool %s, link %s%s", to_string(s.settings.memory.transfer), parking.c_str(),
              format_bytes(s.memory.pool_bytes).c_str(), link, calibrating_ ? " (measuring this machine's compute...)" : "");
  // Stall time per iteration, newest last: the drop when async takes over.
  std::vector<float> stall_ms, iteration_ms;
  for (const TimelineIteration& it : frame.stalls) {
    stall_ms.push_back(static_cast<float>(it.stall_us * 1e-3));
    iteration_ms.push_back(static_cast<float>((it.end_us - it.start_us) * 1e-3));
  }
  char overlay[48] = "";
  if (!stall_ms.empty()) std::snprintf(overlay, sizeof overlay, "%.1f ms stalled", stall_ms.back());
  ImGui::PlotHistogram("stall / iteration", stall_ms.data(), static_cast<int>(stall_ms.size()), 0, overlay, 0,
                       FLT_MAX, {ImGui::GetContentRegionAvail().x - 130, 60});
  if (!iteration_ms.empty()) std::snprintf(overlay, sizeof overlay, "%.1f ms", iteration_ms.back());
  ImGui::PlotHistogram("iteration time", iteration_ms.data(), static_cast<int>(iteration_ms.size()), 0, overlay, 0,
                       FLT_MAX, {ImGui::GetContentRegionAvail().x - 130, 60});
}

}  // namespace tidepool::ui
