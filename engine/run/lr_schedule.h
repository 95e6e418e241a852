// Learning rate as a pure function of the iteration, so a resumed run
// follows exactly the curve of an uninterrupted one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>

#include "engine/core/choices.h"

namespace tidepool {

enum class LrSchedule : std::uint8_t { cosine, step, constant };
inline constexpr Choice<LrSchedule> kLrSchedules[] = {
    {LrSchedule::cosine, "cosine", "lr * (1 + cos(pi * t / T)) / 2, per iteration"},
    {LrSchedule::step, "step", "lr, then x0.1 at 50% and again at 75% of the run"},
    {LrSchedule::constant, "constant", "lr throughout"},
};
constexpr std::span<const Choice<LrSchedule>> choices(LrSchedule) { return kLrSchedules; }

inline float learning_rate(LrSchedule schedule, float lr, std::int64_t iteration, std::int64_t total) {
  const double t = total > 0 ? static_cast<double>(iteration) / static_cast<double>(total) : 0.0;
  switch (schedule) {
    case LrSchedule::constant: return lr;
    case LrSchedule::step: return lr * (t >= 0.75 ? 0.01f : t >= 0.5 ? 0.1f : 1.0f);
    case LrSchedule::cosine:
      return static_cast<float>(lr * 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(t, 1.0))));
  }
  return lr;
}

}  // namespace tidepool
