// Memory-load curves as data: the load and the pool extent after every step
// of the recent iterations, the budget line, the peak; and per iteration
// the peak load, footprint, loss, accuracy and images/s across the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/observe/events.h"
#include "engine/observe/sinks/ring_sink.h"

namespace tidepool::ui {

struct LoadPoint {
  std::int64_t iteration = 0;
  int step = 0;
  double time_us = 0;
  std::size_t load_bytes = 0, extent_bytes = 0;
};

struct IterationPoint {
  std::int64_t iteration = 0;
  std::size_t peak_load_bytes = 0, footprint_bytes = 0;
  float loss = 0, accuracy = 0;
  double images_per_second = 0;
  double seconds = 0;
};

struct MemoryLoadScene {
  std::vector<LoadPoint> points;  // the last iterations' samples, in order
  std::size_t budget_bytes = 0;   // the pool the run is given (0: unknown)
  std::size_t load_limit_bytes = 0;  // AutoSwap's: the peak load it offloads to stay under (0: none)
  std::size_t peak_load_bytes = 0;
  std::size_t peak_index = 0;     // into points
  std::size_t max_extent_bytes = 0;
  std::vector<IterationPoint> iterations;  // every summary in the snapshot
  // false: the device computes no values (sim), so the iterations' losses
  // and accuracies are zeros that mean nothing, and the pictures say so.
  bool computes_values = true;
  // Two runs compared (`tidepool view A B`): the curves' axes reach at
  // least this high and this many samples, the other run's.
  std::size_t axis_bytes = 0;
  std::size_t axis_samples = 0;
  // Which build this is (ui/scene/generation.h): 0 for curves made by hand.
  std::uint64_t generation = 0;
  bool empty() const { return points.empty() && iterations.empty(); }
};

// `iterations`: how many of the latest iterations' per-step samples to keep;
// `batch`: images per iteration, for images/s; `load_limit_bytes`: the
// AutoSwap limit in effect (PlanSettings::load_limit_bytes), 0 for none;
// `computes_values`: the device's (SessionStatus::computes_values).
MemoryLoadScene build_memory_load(const RingSnapshot& events, std::size_t budget_bytes, int iterations,
                                  std::int64_t batch, std::size_t load_limit_bytes = 0, bool computes_values = true);

}  // namespace tidepool::ui
