// The lines `--batch` prints about the memory of a run: its MemorySummary's
// figures in the words of engine/plan/memory_facts.h (which also writes
// them as JSON for `plan --json` and summary.json), and what the settings
// do with them.
#pragma once

#include <string>
#include <vector>

#include "engine/plan/memory_facts.h"
#include "engine/schedule/memory_settings.h"

namespace tidepool::app {

// The pool, the peak load by role, what async offloads do with the blocks they free, what
// compression saves in pinned memory, AutoSwap's load limit.
std::vector<std::string> memory_lines(const MemorySummary& m, const MemorySettings& settings, int compress_threads);

}  // namespace tidepool::app
