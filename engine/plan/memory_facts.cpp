#include "engine/plan/memory_facts.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/core/bytes_text.h"
#include "engine/memory/parking.h"

namespace tidepool {
namespace {

using F = MemoryFact;

constexpr MemoryFactInfo kFacts[] = {
    {F::pool, "pool_bytes", "pool", "pool"},
    {F::needed_pool, "needed_pool_bytes", "needed pool", "needed"},
    {F::minimum_pool, "minimum_pool_bytes", "smallest budget that works", "least budget"},
    {F::peak_load, "peak_load_bytes", "peak load", "peak load"},
    {F::footprint, "footprint_bytes", "footprint", "footprint"},
    {F::competitive_ratio, "competitive_ratio", "competitive ratio", "ratio"},
    {F::largest_free_at_peak, "largest_free_at_peak_bytes", "largest free at peak", "largest free"},
    {F::peak_load_by_role, "peak_breakdown", "peak load by role", "by role"},
    {F::parked_at_peak, "parked_at_peak_bytes", "parked at peak", "parked at peak"},
    {F::holes_at_peak, "holes_at_peak_bytes", "holes at peak", "holes"},
    {F::offloaded, "offloaded_bytes", "offloaded per iteration", "offloaded"},
    {F::pinned_host, "pinned_host_bytes", "pinned host", "pinned"},
    {F::pageable_host, "pageable_host_bytes", "pageable host", "pageable"},
    {F::uncompressed_pinned, "uncompressed_pinned_bytes", "pinned uncompressed", "uncompressed"},
    {F::load_limit, "load_limit_bytes", "AutoSwap load limit", "load limit"},
    {F::parks_offloads, "parks_offloads", "parks offloads", "parks"},
    {F::park_horizon, "park_horizon", "freed blocks parked", "parked"},
    {F::parking_pool, "parking_pool_bytes", "parking pool", "parking pool"},
    {F::arena, "arena_bytes", "arena reserved", "arena"},
};
static_assert(std::size(kFacts) == static_cast<std::size_t>(F::arena) + 1);

// The byte figures, by fact; nullptr for the others.
std::size_t MemorySummary::*bytes_of(MemoryFact f) {
  switch (f) {
    case F::pool: return &MemorySummary::pool_bytes;
    case F::needed_pool: return &MemorySummary::needed_pool_bytes;
    case F::minimum_pool: return &MemorySummary::minimum_pool_bytes;
    case F::peak_load: return &MemorySummary::peak_load_bytes;
    case F::footprint: return &MemorySummary::footprint_bytes;
    case F::largest_free_at_peak: return &MemorySummary::largest_free_at_peak_bytes;
    case F::parked_at_peak: return &MemorySummary::parked_at_peak_bytes;
    case F::holes_at_peak: return &MemorySummary::holes_at_peak_bytes;
    case F::offloaded: return &MemorySummary::offloaded_bytes;
    case F::pinned_host: return &MemorySummary::pinned_bytes;
    case F::pageable_host: return &MemorySummary::pageable_bytes;
    case F::uncompressed_pinned: return &MemorySummary::uncompressed_pinned_bytes;
    case F::load_limit: return &MemorySummary::load_limit_bytes;
    case F::parking_pool: return &MemorySummary::parking_pool_bytes;
    case F::arena: return &MemorySummary::arena_bytes;
    case F::competitive_ratio:
    case F::peak_load_by_role:
    case F::parks_offloads:
    case F::park_horizon: return nullptr;
  }
  return nullptr;
}

Role role_at(std::size_t index) { return static_cast<Role>(index); }

// The roles with any bytes at the peak, largest first (ties in Role's order).
std::string peak_load_by_role_text(const MemorySummary& m) {
  std::vector<std::size_t> order;
  for (std::size_t r = 0; r < m.peak_load_by_role.size(); ++r)
    if (m.peak_load_by_role[r]) order.push_back(r);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return m.peak_load_by_role[a] > m.peak_load_by_role[b]; });
  std::string text;
  for (std::size_t r : order) {
    char share[32];
    std::snprintf(share, sizeof share, " (%.0f %%)", 100.0 * static_cast<double>(m.peak_load_by_role[r]) /
                                                      static_cast<double>(m.peak_load_bytes));
    text += (text.empty() ? "" : ", ") + role_label(role_at(r)) + " " +
            format_bytes(m.peak_load_by_role[r]) + share;
  }
  return text.empty() ? "nothing" : text;
}

}  // namespace

std::span<const MemoryFactInfo> memory_facts() { return kFacts; }

const MemoryFactInfo& fact_info(MemoryFact fact) { return kFacts[static_cast<std::size_t>(fact)]; }

std::string role_label(Role role) {
  std::string words(to_string(role));
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}

std::string park_horizon_text(int park_horizon) {
  if (park_horizon == kParkUntilNeeded) return "all";
  if (park_horizon <= 0) return "none";
  return "up to " + std::to_string(park_horizon);
}

int park_horizon_number(int park_horizon) { return park_horizon == kParkUntilNeeded ? -1 : park_horizon; }

std::optional<std::size_t> fact_bytes(const MemorySummary& m, MemoryFact fact) {
  if (auto bytes = bytes_of(fact)) return m.*bytes;
  return std::nullopt;
}

std::string fact_text(const MemorySummary& m, MemoryFact fact) {
  if (auto bytes = bytes_of(fact)) return format_bytes(m.*bytes);
  switch (fact) {
    case F::competitive_ratio: {
      char text[32];
      std::snprintf(text, sizeof text, "%.3f", m.competitive_ratio());
      return text;
    }
    case F::parks_offloads: return m.park_horizon > 0 ? "yes" : "no";
    case F::park_horizon: return park_horizon_text(m.park_horizon);
    case F::peak_load_by_role: return peak_load_by_role_text(m);
    default: return {};
  }
}

nlohmann::json memory_json(const MemorySummary& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const MemoryFactInfo& f : kFacts) {
    if (auto bytes = bytes_of(f.fact))
      j[f.key] = m.*bytes;
    else if (f.fact == F::competitive_ratio)
      j[f.key] = m.competitive_ratio();
    else if (f.fact == F::parks_offloads)
      j[f.key] = m.park_horizon > 0;
    else if (f.fact == F::park_horizon)
      j[f.key] = park_horizon_number(m.park_horizon);
    else if (f.fact == F::peak_load_by_role) {
      nlohmann::json& by_role = j[f.key] = nlohmann::json::object();
      for (std::size_t r = 0; r < m.peak_load_by_role.size(); ++r)
        by_role[std::string(to_string(role_at(r)))] = m.peak_load_by_role[r];
    }
  }
  return j;
}

MemorySummary memory_from_json(const nlohmann::json& j) {
  MemorySummary m;
  for (const MemoryFactInfo& f : kFacts)
    if (auto bytes = bytes_of(f.fact)) m.*bytes = j.value(f.key, std::size_t{0});
  const int park_horizon = j.value(fact_info(F::park_horizon).key, 0);
  m.park_horizon = park_horizon < 0 ? kParkUntilNeeded : park_horizon;
  // Summaries from before the breakdown have none: every role reads as 0.
  if (const auto by_role = j.find(fact_info(F::peak_load_by_role).key); by_role != j.end())
    for (std::size_t r = 0; r < m.peak_load_by_role.size(); ++r)
      m.peak_load_by_role[r] = by_role->value(std::string(to_string(role_at(r))), std::size_t{0});
  // Runs from before the arena was written reserved at least their pool.
  if (!j.contains(fact_info(F::arena).key)) m.arena_bytes = m.pool_bytes;
  return m;
}

}  // namespace tidepool
