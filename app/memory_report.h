// A MemorySummary (engine/plan/memory_summary.h) in words and in JSON: the
// one writer behind `tidepool plan --json`'s rows and summary.json's memory
// figures, and behind `--batch`'s memory lines, so they cannot drift.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/schedule/memory_settings.h"
#include "engine/plan/memory_summary.h"

namespace tidepool::app {

// The park horizon as JSON writes it: the count of blocks parked at once,
// 0 for none, -1 for every one until the pool needs the room.
int park_horizon_number(int park_horizon);

// pool_bytes, needed_pool_bytes, minimum_pool_bytes, peak_load_bytes,
// footprint_bytes, competitive_ratio, largest_free_at_peak_bytes,
// offloaded_bytes, pinned_host_bytes, uncompressed_pinned_bytes,
// load_limit_bytes, parks_offloads, park_horizon, parking_pool_bytes,
// arena_bytes.
nlohmann::json memory_json(const MemorySummary& m);
// The MemorySummary back from those keys (summary.json, for `tidepool
// view`); a key written before it existed reads as 0. Throws
// nlohmann::json::exception when a key holds something else.
MemorySummary memory_from_json(const nlohmann::json& j);

// The lines `--batch` prints about the memory of a run with `settings`:
// the pool, what async offloads do with the blocks they free, what
// compression saves in pinned memory.
std::vector<std::string> memory_lines(const MemorySummary& m, const MemorySettings& settings, int compress_threads);

}  // namespace tidepool::app
