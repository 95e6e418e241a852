#include "ui/scene/stats.h"

namespace tidepool::ui {

IterationStats build_stats(const RingSnapshot& events, const AddressMapScene& map,
                           const TimelineScene& timeline, std::size_t pinned_host_bytes) {
  IterationStats s;
  s.pinned_host_bytes = pinned_host_bytes;
  if (events.iterations.empty()) return s;
  const IterationSummary& last = events.iterations.back();
  s.iteration = last.iteration;
  s.peak_load_bytes = last.peak_load_bytes;
  s.footprint_bytes = last.footprint_bytes;
  s.competitive_ratio =
      last.peak_load_bytes ? static_cast<double>(last.footprint_bytes) / static_cast<double>(last.peak_load_bytes) : 0;
  s.iteration_ms = (last.end_us - last.start_us) * 1e-3;
  if (map.iteration == last.iteration && map.largest_free_at_peak)
    s.largest_free_at_peak_bytes = map.largest_free_at_peak->bytes;
  for (const TimelineIteration& it : timeline.iterations)
    if (it.iteration == last.iteration) s.stall_ms = it.stall_us * 1e-3;
  for (const TimelineSpan& sp : timeline.spans) {
    if (sp.iteration != last.iteration) continue;
    if (sp.kind == SpanKind::offload) s.offloaded_bytes += static_cast<double>(sp.bytes);
    if (sp.kind == SpanKind::prefetch) s.prefetched_bytes += static_cast<double>(sp.bytes);
  }
  return s;
}

}  // namespace tidepool::ui
