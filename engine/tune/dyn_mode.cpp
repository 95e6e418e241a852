#include "engine/tune/dyn_mode.h"

#include <chrono>
#include <limits>

namespace tidepool {

DynChoice choose_dyn(Trainer& trainer, const float* images, const std::int32_t* labels) {
  const MemorySettings start = trainer.memory().settings;
  DynChoice choice;
  std::vector<OffloadMode> fitting;
  std::string last_refusal;
  for (OffloadMode mode : {OffloadMode::base, OffloadMode::aconv, OffloadMode::conv, OffloadMode::all}) {
    MemorySettings settings = start;
    settings.mode = mode;
    try {
      trainer.apply(settings);
      fitting.push_back(mode);
      choice.profiles.push_back({mode, true, 0});
    } catch (const DeviceError& e) {
      choice.profiles.push_back({mode, false, 0});
      last_refusal = e.what();
    }
  }
  if (fitting.empty()) throw DeviceError("dyn: no offload mode fits: " + last_refusal);

  double best = std::numeric_limits<double>::infinity();
  choice.mode = fitting.front();
  if (fitting.front() != OffloadMode::base && fitting.size() > 1) {
    const std::vector<float> state = trainer.read_state();
    const std::int64_t iteration = trainer.iteration();
    EventSink* sink = trainer.sink();  // profiling iterations are not part of the run's record
    trainer.set_sink(nullptr);
    for (OffloadMode mode : fitting) {
      MemorySettings settings = start;
      settings.mode = mode;
      trainer.apply(settings);
      trainer.train_step(images, labels);  // warm-up: first use of this schedule
      const auto t0 = std::chrono::steady_clock::now();
      trainer.train_step(images, labels);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      trainer.write_state(state);
      trainer.set_iteration(iteration);
      for (auto& p : choice.profiles)
        if (p.mode == mode) p.seconds = seconds;
      if (seconds < best) best = seconds, choice.mode = mode;
    }
    trainer.set_sink(sink);
  }
  MemorySettings settings = start;
  settings.mode = choice.mode;
  trainer.apply(settings);
  return choice;
}

}  // namespace tidepool
