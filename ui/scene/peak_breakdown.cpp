#include "ui/scene/peak_breakdown.h"

#include "engine/plan/memory_facts.h"
#include "ui/scene/colours.h"

namespace tidepool::ui {

std::vector<PeakBarPart> peak_bar(const MemorySummary& m) {
  std::vector<PeakBarPart> parts;
  for (int r = 0; r < kRoleCount; ++r) {
    const Role role = static_cast<Role>(r);
    if (m.peak_load_by_role[r]) parts.push_back({role_label(role), m.peak_load_by_role[r], role_colour(role), true});
  }
  if (m.parked_at_peak_bytes) parts.push_back({"parked", m.parked_at_peak_bytes, kParked, false});
  if (m.holes_at_peak_bytes) parts.push_back({"holes", m.holes_at_peak_bytes, kHole, false});
  return parts;
}

}  // namespace tidepool::ui
