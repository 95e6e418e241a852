// Iterations as people count them. Events number an iteration by how many
// came before it (the trainer's count, from 0); the command line
// (--iterations, --trace-from, --stop-after), metrics.csv and every picture,
// view and message count from 1. Whatever shows an iteration's number to a
// person passes it through here.
#pragma once

#include <cstdint>
#include <string>

namespace tidepool::ui {

inline std::int64_t shown_iteration(std::int64_t event_iteration) { return event_iteration + 1; }

// "iteration 52", or "iterations 51-52", from two events' numbers.
inline std::string iterations_text(std::int64_t first, std::int64_t last) {
  return first == last ? "iteration " + std::to_string(shown_iteration(first))
                       : "iterations " + std::to_string(shown_iteration(first)) + "-" +
                             std::to_string(shown_iteration(last));
}

}  // namespace tidepool::ui
