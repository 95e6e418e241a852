#include "ui/views/stats_view.h"

#include "ui/scene/stats_table.h"

namespace tidepool::ui {

void StatsView::draw(const Frame& frame) {
  if (!ImGui::BeginTable("stats", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
  ImGui::TableSetupColumn("figure", ImGuiTableColumnFlags_WidthFixed, 150);
  ImGui::TableSetupColumn("value");
  for (const StatsRow& r : stats_table(frame.status, frame.stats, frame.rank)) {
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::TextUnformatted(r.figure.c_str());
    ImGui::TableSetColumnIndex(1);
    ImGui::TextWrapped("%s", r.value.c_str());  // a long run name or hint wraps in a narrow panel
  }
  ImGui::EndTable();
}

}  // namespace tidepool::ui
