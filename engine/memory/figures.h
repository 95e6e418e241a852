// Memory figures that are computed from other figures, each defined once
// (the papers' names; README "What the figures mean"). The figures a replay
// measures (peak load, footprint, largest free block) come from the one
// replay loop (engine/memory/replay.h); what is derived from them is here,
// so that the plan, the allocators, `replay`, the window and the pictures
// cannot disagree.
#pragma once

#include <cstddef>

namespace tidepool {

// SmartPool's competitive ratio: footprint / peak load, 1 for a perfect
// placement. A pool that never held anything wasted nothing: 1.
inline double competitive_ratio(std::size_t footprint_bytes, std::size_t peak_load_bytes) {
  return peak_load_bytes ? static_cast<double>(footprint_bytes) / static_cast<double>(peak_load_bytes) : 1.0;
}

}  // namespace tidepool
