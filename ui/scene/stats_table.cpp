#include "ui/scene/stats_table.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/bytes_text.h"
#include "engine/plan/memory_facts.h"
#include "ui/scene/iteration_number.h"

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

// The iteration's memory figures, in the words of the plan's.
void measured_rows(const IterationStats& st, std::vector<StatsRow>& rows) {
  MemorySummary measured;
  measured.peak_load_bytes = st.peak_load_bytes;
  measured.footprint_bytes = st.footprint_bytes;
  measured.largest_free_at_peak_bytes = st.largest_free_at_peak_bytes;
  for (MemoryFact f :
       {MemoryFact::peak_load, MemoryFact::footprint, MemoryFact::competitive_ratio, MemoryFact::largest_free_at_peak})
    rows.push_back({fact_info(f).label, fact_text(measured, f)});
}

}  // namespace

std::vector<StatsRow> stats_table(const SessionStatus& s, const IterationStats& st, int rank) {
  std::vector<StatsRow> rows;
  auto row = [&](std::string figure, std::string value) { rows.push_back({std::move(figure), std::move(value)}); };
  if (s.state == RunState::snapshot) {  // a trace placed by a heuristic: no training, no transfers
    row("snapshot", s.dataset_name);
    row("device", s.device);
    row("state", to_string(s.state));
    row("placed by", s.settings.memory.heuristic);
    measured_rows(st, rows);
    row("PyTorch reserved", format_bytes(s.snapshot_reserved_bytes) + " at most (the trace's segments)");
    return rows;
  }
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
    row("last iteration", std::to_string(shown_iteration(st.iteration)));
    row("iteration time", timing("%.2f ms", st.iteration_ms, s, s.predicted ? s.predicted->iteration_us : 0));
    row("stall time", timing("%.2f ms", st.stall_ms, s, s.predicted ? s.predicted->stall_us : 0));
    measured_rows(st, rows);
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
  auto fact = [&](MemoryFact f, const std::string& note = {}) { row(fact_info(f).label, fact_text(m, f) + note); };
  fact(MemoryFact::pinned_host, settings.compress && m.pinned_bytes ? " (two staging slots)"
                                : pageable && m.pinned_bytes        ? " (staging buffers)"
                                                                    : "");
  if (pageable) fact(MemoryFact::pageable_host, " (the offloads, copied through the staging)");
  if (settings.copy_engine == CopyEngine::threads) row("copies", "host threads, in the compute stream's order");
  if (settings.transfer == TransferMode::async && m.pinned_bytes > 0)
    fact(MemoryFact::park_horizon,
         m.parking_pool_bytes ? "; more parked from " + format_bytes(m.parking_pool_bytes) : std::string());
  if (settings.mode == OffloadMode::autoswap) {
    if (m.load_limit_bytes)
      fact(MemoryFact::load_limit, " (offloads what keeps the load under)");
    else
      row(fact_info(MemoryFact::load_limit).label, "none: nothing offloaded (set a budget)");
  }
  fact(MemoryFact::pool);
  fact(MemoryFact::minimum_pool);
  row(std::string("planned ") + fact_info(MemoryFact::peak_load).label, fact_text(m, MemoryFact::peak_load));
  if (m.peak_load_bytes) {  // the bar above the table draws the same (ui/scene/peak_breakdown.h)
    row(std::string("planned ") + fact_info(MemoryFact::peak_load_by_role).label,
        fact_text(m, MemoryFact::peak_load_by_role));
    row("beside it, below the extent", fact_text(m, MemoryFact::parked_at_peak) + " parked, " +
                                           fact_text(m, MemoryFact::holes_at_peak) + " in holes");
  }
  fact(MemoryFact::arena);
  return rows;
}

}  // namespace tidepool::ui
