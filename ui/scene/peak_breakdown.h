// What the planned peak is made of, as the Stats view's stacked bar: the
// steady iteration's peak load by role (MemorySummary::peak_load_by_role,
// from the one replay loop), then, set apart from the load, the parked
// blocks and the holes below the extent at that moment. Words and colours
// only; ui/views/stats_view.cpp draws it, and the tests read it here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/memory_summary.h"

namespace tidepool::ui {

struct PeakBarPart {
  std::string label;  // a role in words (role_label, engine/plan/memory_facts.h), "parked" or "holes"
  std::size_t bytes = 0;
  std::uint32_t colour = 0;  // ui/scene/colours.h: the role's, kParked, kHole
  bool in_load = true;       // false: beside the load (parked, holes)
};

// The roles with bytes at the peak, in Role's order, then parked and holes
// where there are any: the parts in the load sum to peak_load_bytes, all of
// them to the extent at the peak. Empty for a plan that placed nothing.
std::vector<PeakBarPart> peak_bar(const MemorySummary& m);

}  // namespace tidepool::ui
