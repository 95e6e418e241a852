#include "ui/scene/stats.h"

#include <algorithm>
#include <map>
#include <string>


namespace tidepool::ui {

IterationStats build_stats(const RingSnapshot& events, const TimelineScene& timeline, std::size_t pinned_host_bytes) {
  IterationStats s;
  s.pinned_host_bytes = pinned_host_bytes;
  if (events.iterations.empty()) return s;
  const IterationSummary& last = events.iterations.back();
  s.iteration = last.iteration;
  s.peak_load_bytes = last.peak_load_bytes;
  s.footprint_bytes = last.footprint_bytes;
  s.iteration_ms = (last.end_us - last.start_us) * 1e-3;
  s.largest_free_at_peak_bytes = last.largest_free_at_peak.bytes;
  for (const TimelineIteration& it : timeline.iterations)
    if (it.iteration == last.iteration) s.stall_ms = it.stall_us * 1e-3;
  // A copy in is a prefetch when the tensor went out earlier in the
  // iteration, else an upload from the host (the batch).
  std::map<std::string, int> first_offload;  // tensor -> step
  for (const TimelineSpan& sp : timeline.spans)
    if (sp.iteration == last.iteration && sp.kind == SpanKind::offload) {
      s.offloaded_bytes += static_cast<double>(sp.bytes);
      auto [it, added] = first_offload.emplace(sp.tensor, sp.step);
      if (!added) it->second = std::min(it->second, sp.step);
    }
  for (const TimelineSpan& sp : timeline.spans)
    if (sp.iteration == last.iteration && sp.kind == SpanKind::compress) {
      s.compressed = true;
      s.compressed_bytes += static_cast<double>(sp.bytes);
    }
  for (const TimelineSpan& sp : timeline.spans)
    if (sp.iteration == last.iteration && sp.kind == SpanKind::prefetch) {
      const auto out = first_offload.find(sp.tensor);
      (out != first_offload.end() && out->second < sp.step ? s.prefetched_bytes : s.uploaded_bytes) +=
          static_cast<double>(sp.bytes);
    }
  return s;
}

}  // namespace tidepool::ui
