// The Stats view's table as words, one row per figure: the run and its
// state, the latest finished iteration's figures (ui/scene/stats.h) beside
// the plan's prediction, and the MemoryPlan's figures from the status, each
// named and written as engine/plan/memory_facts.h declares it. The
// view (ui/views/stats_view.h) draws these rows as they are, so the tests
// read what the window shows without drawing it.
#pragma once

#include <string>
#include <vector>

#include "ui/scene/stats.h"
#include "ui/session_link.h"

namespace tidepool::ui {

struct StatsRow {
  std::string figure, value;
};

// Where the device computes no values (the sim device) the test accuracy
// says kNoNumbers, and the iteration's times are "simulated" rather than
// "measured". With a prediction (SessionStatus::predicted) the iteration
// and stall times are shown beside it: "12.40 ms simulated | 12.10 ms
// predicted".
// On a data-parallel run a row says whose events the iteration figures are
// (`rank`'s; the rest is rank 0's status, the same plan on every rank).
std::vector<StatsRow> stats_table(const SessionStatus& status, const IterationStats& stats, int rank = 0);

}  // namespace tidepool::ui
