#include "ui/views/overlap_view.h"

#include <algorithm>

namespace tidepool::ui {
namespace {

constexpr const char* kModel = "vdnn_constructed";
// Small enough that an iteration takes well under a second on a laptop's
// cores, large enough that each activation takes milliseconds on the link.
constexpr std::int64_t kBatch = 32;

}  // namespace

void OverlapView::draw(const Frame& frame) {
  const SessionStatus& s = frame.status;
  ImGui::TextWrapped(
      "vDNN++'s constructed network (Table III) with every layer's input offloaded to pinned host memory "
      "over a link throttled to a few GB/s. With synchronous transfers (vDNN) each layer waits for its "
      "copies: the compute lane of the timeline shows red stalls. Switch to asynchronous transfers "
      "(vDNN++): the copies run under the next layers' compute and the stalls disappear. The numbers "
      "trained are the same either way.");
  ImGui::SetNextItemWidth(160);
  ImGui::SliderFloat("link GB/s", &link_gbps_, 0.25f, 8.0f, "%.2f GB/s");
  MemorySettings settings = s.settings;
  settings.mode = OffloadMode::all;
  settings.budget_bytes = 0;
  settings.link_gbps = link_gbps_;
  const bool running_it = s.model == kModel;
  if (ImGui::Button(running_it ? "Restart the scenario (sync)" : "Start: vDNN++ constructed network, sync")) {
    settings.transfer = TransferMode::sync;
    frame.link.restart(kModel, kBatch, settings);
    started_ = true;
  }
  if (!running_it) {
    ImGui::TextDisabled("(training %s now; starting replaces it)", s.model.c_str());
    return;
  }
  ImGui::SameLine();
  if (ImGui::Button("sync (vDNN)")) {
    settings.transfer = TransferMode::sync;
    frame.link.request(settings);
  }
  ImGui::SameLine();
  if (ImGui::Button("async (vDNN++)")) {
    settings.transfer = TransferMode::async;
    frame.link.request(settings);
  }
  ImGui::Text("now: %s transfers, link %s", to_string(s.settings.transfer),
              s.settings.link_gbps > 0 ? (std::to_string(s.settings.link_gbps).substr(0, 4) + " GB/s").c_str()
                                       : "unthrottled");
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
