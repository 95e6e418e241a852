#include "ui/views/stats_view.h"

#include <algorithm>

namespace tidepool::ui {
namespace {

void row(const char* name, const std::string& value) {
  ImGui::TableNextRow();
  ImGui::TableSetColumnIndex(0);
  ImGui::TextUnformatted(name);
  ImGui::TableSetColumnIndex(1);
  ImGui::TextWrapped("%s", value.c_str());  // a long run name or hint wraps in a narrow panel
}

std::string number(const char* format, double v) {
  char text[48];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

}  // namespace

void StatsView::draw(const Frame& frame) {
  const SessionStatus& s = frame.status;
  const IterationStats& st = frame.stats;
  if (!ImGui::BeginTable("stats", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
  ImGui::TableSetupColumn("figure", ImGuiTableColumnFlags_WidthFixed, 150);
  ImGui::TableSetupColumn("value");
  row("run", s.settings.model + " on " + s.dataset_name + ", batch " + std::to_string(s.settings.batch_size));
  row("device", s.device.empty() ? "-" : s.device);
  row("state", to_string(s.state));
  if (s.state == RunState::diverged) row("diverged", s.error);
  row("iteration", std::to_string(s.iteration) + " of " + std::to_string(s.total_iterations) + " (epoch " +
                       std::to_string(s.epoch + 1) + " of " + std::to_string(s.epochs) + ")");
  row("test accuracy", s.test_accuracy < 0 ? "after the first epoch" : number("%.2f %%", 100.0 * s.test_accuracy));
  if (st.iteration >= 0) {
    row("last iteration", std::to_string(st.iteration) + ", " + number("%.1f ms", st.iteration_ms));
    row("peak load", format_bytes(st.peak_load_bytes));
    row("footprint", format_bytes(st.footprint_bytes));
    row("competitive ratio", number("%.3f", st.competitive_ratio));
    row("largest free at peak", format_bytes(st.largest_free_at_peak_bytes));
    row("stall time", number("%.2f ms", st.stall_ms));
    row("offloaded / prefetched", format_bytes(static_cast<std::size_t>(st.offloaded_bytes)) + " / " +
                                      format_bytes(static_cast<std::size_t>(st.prefetched_bytes)));
    row("batch upload", format_bytes(static_cast<std::size_t>(st.uploaded_bytes)));
    if (st.compressed)
      row("compressed on the host",
          format_bytes(static_cast<std::size_t>(st.compressed_bytes)) + " of " +
              format_bytes(static_cast<std::size_t>(st.offloaded_bytes)) +
              number(" (%.0f %% saved)", 100.0 * (1.0 - st.compressed_bytes / std::max(st.offloaded_bytes, 1.0))));
  }
  const MemorySummary& m = s.memory;
  const MemorySettings& settings = s.settings.memory;
  row("pinned host", format_bytes(m.pinned_bytes) + (settings.compress && m.pinned_bytes ? " (two staging slots)" : ""));
  if (settings.transfer == TransferMode::async && m.pinned_bytes > 0) {
    std::string parked = freed_blocks_text(m.park_horizon);
    if (m.parking_pool_bytes) parked += "; more parked from " + format_bytes(m.parking_pool_bytes);
    row("freed by offloads", parked);
  }
  if (settings.mode == OffloadMode::autoswap)
    row("AutoSwap load limit", m.load_limit_bytes ? format_bytes(m.load_limit_bytes) + " (offloads what keeps the load under)"
                                                  : std::string("none: nothing offloaded (set a budget)"));
  row("pool (budget)", format_bytes(m.pool_bytes));
  row("smallest workable", format_bytes(m.minimum_pool_bytes));
  row("planned peak load", format_bytes(m.peak_load_bytes));
  row("arena reserved", format_bytes(m.arena_bytes));
  ImGui::EndTable();
}

}  // namespace tidepool::ui
