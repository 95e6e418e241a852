#include "ui/views/stats_view.h"

#include <algorithm>

#include "ui/scene/colours.h"
#include "ui/scene/peak_breakdown.h"
#include "ui/scene/stats_table.h"

namespace tidepool::ui {
namespace {

// The planned peak as one stacked bar across the view, the load's roles
// first and, after a gap, what lay beside the load below the extent
// (parked blocks outlined, as the address map draws them); a legend of
// the parts under it, wrapped to the view's width.
void draw_peak_bar(const MemorySummary& m) {
  const std::vector<PeakBarPart> parts = peak_bar(m);
  if (parts.empty()) return;
  std::size_t total = 0;
  bool beside = false;
  for (const PeakBarPart& p : parts) {
    total += p.bytes;
    beside |= !p.in_load;
  }
  ImGui::TextWrapped("planned peak: load by role | parked, holes");
  const float height = ImGui::GetTextLineHeight(), gap = beside ? 6.0f : 0.0f;
  const float width = std::max(ImGui::GetContentRegionAvail().x, 1.0f);
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  float x = at.x;
  bool past_load = false;
  for (const PeakBarPart& p : parts) {
    if (!p.in_load && !past_load) {
      x += gap;
      past_load = true;
    }
    const float w = (width - gap) * static_cast<float>(static_cast<double>(p.bytes) / static_cast<double>(total));
    draw->AddRectFilled({x, at.y}, {x + w, at.y + height}, im_colour(p.colour));
    if (p.label == "parked") draw->AddRect({x, at.y}, {x + w, at.y + height}, im_colour(kParked));
    x += w;
  }
  ImGui::Dummy({width, height});
  const float right = ImGui::GetCursorScreenPos().x + width;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string text = parts[i].label + " " + format_bytes(parts[i].bytes);
    const float item = height + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(text.c_str()).x;
    if (i > 0) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + item > right) ImGui::NewLine();
    }
    const ImVec2 swatch = ImGui::GetCursorScreenPos();
    draw->AddRectFilled(swatch, {swatch.x + height, swatch.y + height}, im_colour(parts[i].colour));
    ImGui::Dummy({height, height});
    ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
    ImGui::TextUnformatted(text.c_str());
  }
}

}  // namespace

void StatsView::draw(const Frame& frame) {
  draw_peak_bar(frame.status.memory);
  if (!ImGui::BeginTable("stats", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
  // The figures' column: 150 px, or less than half a narrow panel, its
  // labels wrapped rather than cut.
  ImGui::TableSetupColumn("figure", ImGuiTableColumnFlags_WidthFixed,
                          std::min(150.0f, 0.42f * ImGui::GetContentRegionAvail().x));
  ImGui::TableSetupColumn("value");
  for (const StatsRow& r : stats_table(frame.status, frame.stats, frame.rank)) {
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::TextWrapped("%s", r.figure.c_str());
    ImGui::TableSetColumnIndex(1);
    ImGui::TextWrapped("%s", r.value.c_str());  // a long run name or hint wraps in a narrow panel
  }
  ImGui::EndTable();
}

}  // namespace tidepool::ui
