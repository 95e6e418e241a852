// Every figure of a MemorySummary (memory_summary.h), declared once: its
// key in JSON (`plan --json`, summary.json), its name in words (the window's
// Stats, `--batch`'s memory lines), its column in `plan`'s table, and how
// its value reads. Whatever shows a memory figure renders it from this
// table, so no figure is named, keyed or printed two ways. What each one
// means is in docs/memory.md#what-the-figures-mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/plan/memory_summary.h"

namespace tidepool {

enum class MemoryFact : std::uint8_t {
  pool,
  needed_pool,
  minimum_pool,
  peak_load,
  footprint,
  competitive_ratio,
  largest_free_at_peak,
  peak_load_by_role,  // JSON: an object keyed by each role's name (to_string(Role)), every role present
  parked_at_peak,
  holes_at_peak,
  offloaded,
  pinned_host,
  pageable_host,
  uncompressed_pinned,
  load_limit,
  parks_offloads,
  park_horizon,
  parking_pool,
  arena,
};

struct MemoryFactInfo {
  MemoryFact fact;
  const char* key;     // in JSON
  const char* label;   // in words
  const char* column;  // plan's table header
};

// In the order above, which is the order JSON writes them.
std::span<const MemoryFactInfo> memory_facts();
const MemoryFactInfo& fact_info(MemoryFact fact);

// A byte figure's value; nothing for the others (the ratio, the parking
// facts).
std::optional<std::size_t> fact_bytes(const MemorySummary& m, MemoryFact fact);

// The value in words: bytes as format_bytes writes them, the competitive
// ratio to three decimals, the park horizon as park_horizon_text, the peak
// load by role as its roles with any bytes, largest first, each with its
// share of the peak ("workspace 1.2 GiB (61 %), activation ...").
std::string fact_text(const MemorySummary& m, MemoryFact fact);

// A role in words, as the breakdown's text and the Stats bar name it: its
// JSON key with spaces ("weight gradient").
std::string role_label(Role role);

// How many blocks freed by async offloads stay parked at once: "all"
// (until the pool needs the room), "none", or "up to N".
std::string park_horizon_text(int park_horizon);
// The same in JSON: the count, 0 for none, -1 for all.
int park_horizon_number(int park_horizon);

// Every fact under its key.
nlohmann::json memory_json(const MemorySummary& m);
// The MemorySummary back from those keys (summary.json, for `tidepool
// view`); a key written before it existed reads as 0 (the arena: the
// pool). Throws nlohmann::json::exception when a key holds something else.
MemorySummary memory_from_json(const nlohmann::json& j);

}  // namespace tidepool
