#include "ui/scene/overlap.h"

#include <cmath>

namespace tidepool::ui {

MemorySettings overlap_settings(MemorySettings s, TransferMode transfer, double link_gbps,
                                std::size_t budget_bytes) {
  s.mode = OffloadMode::all;
  s.transfer = transfer;
  s.lookahead = OverlapScenario::lookahead;
  s.budget_bytes = budget_bytes;
  s.link_gbps = link_gbps;
  return s;
}

RunSettings overlap_run(RunSettings from, TransferMode transfer, double link_gbps) {
  from.model = OverlapScenario::model;
  from.batch_size = OverlapScenario::batch;
  from.memory = overlap_settings(from.memory, transfer, link_gbps > 0 ? link_gbps : OverlapScenario::first_link_gbps);
  return from;
}

std::optional<double> overlap_link_gbps(const TimelineScene& timeline, double fraction) {
  if (timeline.iterations.empty() || fraction <= 0) return std::nullopt;
  const std::int64_t newest = timeline.iterations.back().iteration;
  double forward_us = 0, offloaded_bytes = 0;
  for (const TimelineSpan& s : timeline.spans) {
    if (s.iteration != newest) continue;
    if (s.kind == SpanKind::forward) forward_us += s.duration_us();
    if (s.kind == SpanKind::offload) offloaded_bytes += static_cast<double>(s.bytes);
  }
  if (forward_us <= 0 || offloaded_bytes <= 0) return std::nullopt;
  const double gbps = offloaded_bytes / (fraction * forward_us * 1e-6) / 1e9;
  // Two significant figures: a number a student can read off the slider.
  const double scale = std::pow(10.0, std::floor(std::log10(gbps)) - 1);
  return std::round(gbps / scale) * scale;
}

}  // namespace tidepool::ui
