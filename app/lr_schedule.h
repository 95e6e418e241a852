// Learning rate as a pure function of the iteration, so a resumed run
// follows exactly the curve of an uninterrupted one.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>
#include <string>

namespace tidepool::app {

//  constant: lr throughout;
//  step:     lr, then x0.1 at 50% and again at 75% of the run (the CIFAR ResNet recipe);
//  cosine:   lr * (1 + cos(pi * t / T)) / 2, per iteration.
inline float learning_rate(const std::string& schedule, float lr, std::int64_t iteration,
                           std::int64_t total) {
  const double t = total > 0 ? static_cast<double>(iteration) / static_cast<double>(total) : 0.0;
  if (schedule == "constant") return lr;
  if (schedule == "step") return lr * (t >= 0.75 ? 0.01f : t >= 0.5 ? 0.1f : 1.0f);
  if (schedule == "cosine")
    return static_cast<float>(lr * 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(t, 1.0))));
  throw std::invalid_argument("unknown learning-rate schedule '" + schedule +
                              "' (valid: cosine, step, constant)");
}

}  // namespace tidepool::app
