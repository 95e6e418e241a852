#include "ui/scene/stats_table.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/bytes_text.h"
#include "engine/memory/parking.h"  // kParkUntilNeeded

namespace tidepool::ui {
namespace {

std::string number(const char* format, double v) {
  char text[48];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// A time the iterations took, and beside it what the plan predicted. The
// sim device's times are its virtual clock's: simulated, not measured.
std::string timing(const char* format, double ms, const SessionStatus& s, double predicted_us) {
  std::string text = number(format, ms);
  if (!s.predicted) return text;
  return text + (s.computes_values ? " measured | " : " simulated | ") + number(format, predicted_us * 1e-3) +
         " predicted";
}

}  // namespace

std::string freed_blocks_text(int park_horizon) {
  if (park_horizon == kParkUntilNeeded) return "parked until needed";
  if (park_horizon > 0) return "up to " + std::to_string(park_horizon) + " parked at once";
  return "reused at once";
}

std::vector<StatsRow> stats_table(const SessionStatus& s, const IterationStats& st, int rank) {
  std::vector<StatsRow> rows;
  auto row = [&](std::string figure, std::string value) { rows.push_back({std::move(figure), std::move(value)}); };
  row("run", s.settings.model + (s.settings.fuse == Fusion::relu ? " (ReLUs fused)" : "") + " on " + s.dataset_name +
                 ", batch " + std::to_string(s.settings.batch_size));
  row("device", s.device.empty() ? "-" : s.device);
  if (s.settings.memory.ranks > 1)
    row("rank shown", std::to_string(rank) + " of " + std::to_string(s.settings.memory.ranks) + ", batch " +
                          std::to_string(s.settings.batch_size / s.settings.memory.ranks) + " each");
  row("state", to_string(s.state));
  if (s.state == RunState::diverged) row("diverged", s.error);
  row("iteration", std::to_string(s.iteration) + " of " + std::to_string(s.total_iterations) + " (epoch " +
                       std::to_string(s.epoch + 1) + " of " + std::to_string(s.epochs) + ")");
  row("test accuracy", !s.computes_values    ? kNoNumbers
                       : s.test_accuracy < 0 ? "after the first epoch"
                                             : number("%.2f %%", 100.0 * s.test_accuracy));
  if (st.iteration >= 0) {
    row("last iteration", std::to_string(st.iteration));
    row("iteration time", timing("%.2f ms", st.iteration_ms, s, s.predicted ? s.predicted->iteration_us : 0));
    row("stall time", timing("%.2f ms", st.stall_ms, s, s.predicted ? s.predicted->stall_us : 0));
    row("peak load", format_bytes(st.peak_load_bytes));
    row("footprint", format_bytes(st.footprint_bytes));
    row("competitive ratio", number("%.3f", st.competitive_ratio));
    row("largest free at peak", format_bytes(st.largest_free_at_peak_bytes));
    row("offloaded / prefetched", format_bytes(static_cast<std::size_t>(st.offloaded_bytes)) + " / " +
                                      format_bytes(static_cast<std::size_t>(st.prefetched_bytes)));
    row("batch upload", format_bytes(static_cast<std::size_t>(st.uploaded_bytes)));
    if (st.compressed)
      row("compressed on the host",
          format_bytes(static_cast<std::size_t>(st.compressed_bytes)) + " of " +
              format_bytes(static_cast<std::size_t>(st.offloaded_bytes)) +
              number(" (%.0f %% saved)", 100.0 * (1.0 - st.compressed_bytes / std::max(st.offloaded_bytes, 1.0))));
  } else if (s.predicted) {  // before the first iteration, the plan already says what to expect
    row("predicted iteration", number("%.2f ms", s.predicted->iteration_us * 1e-3) + ", stalled " +
                                   number("%.2f ms", s.predicted->stall_us * 1e-3));
  }
  if (s.loss_scale)
    row("fp16 loss scale", number("%g", s.loss_scale->scale) + ", " + std::to_string(s.loss_scale->skipped_steps) +
                               (s.loss_scale->skipped_steps == 1 ? " step" : " steps") + " skipped (overflowed)");
  const MemorySummary& m = s.memory;
  const MemorySettings& settings = s.settings.memory;
  const bool pageable = settings.host_memory == HostMemory::pageable;
  row("pinned host", format_bytes(m.pinned_bytes) + (settings.compress && m.pinned_bytes ? " (two staging slots)"
                                                     : pageable && m.pinned_bytes  ? " (staging buffers)"
                                                                                   : ""));
  if (pageable) row("pageable host", format_bytes(m.pageable_bytes) + " (the offloads, copied through the staging)");
  if (settings.copy_engine == CopyEngine::threads) row("copies", "host threads, in the compute stream's order");
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
  return rows;
}

}  // namespace tidepool::ui
