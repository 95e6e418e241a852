// The figures of the stats view, from the latest finished iteration.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/observe/events.h"
#include "engine/observe/sinks/ring_sink.h"
#include "ui/scene/timeline.h"

namespace tidepool::ui {

struct IterationStats {
  std::int64_t iteration = -1;  // -1: none finished yet
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;
  std::size_t largest_free_at_peak_bytes = 0;
  std::size_t pinned_host_bytes = 0;
  double stall_ms = 0;      // compute-stream waiting on transfers
  double iteration_ms = 0;
  // Host copies of the iteration: offloaded to the host, prefetched back,
  // and uploaded (the batch: copied in without having been offloaded).
  double offloaded_bytes = 0, prefetched_bytes = 0, uploaded_bytes = 0;
  // Compressed offloads: what the offloaded bytes took on the host.
  bool compressed = false;
  double compressed_bytes = 0;
};

// The memory figures are the ones the replay loop computed for the
// iteration (IterationSummary), the copies and stalls the timeline's.
IterationStats build_stats(const RingSnapshot& events, const TimelineScene& timeline, std::size_t pinned_host_bytes);

}  // namespace tidepool::ui
