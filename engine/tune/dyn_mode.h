// vDNN's `dyn` policy: the fastest offload mode that fits the budget,
// found by profiling. If keeping everything (base) fits, that is the
// answer without profiling (it transfers nothing); otherwise each mode that
// fits is timed over one iteration and the fastest wins.
//
// Unlike vDNN, dyn keeps the conv algorithm scheme the user chose: picking
// `m` or `p` by timing would make the numbers depend on how fast the
// machine happened to be, and offloading must never change the numbers.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/run/trainer.h"

namespace tidepool {

struct DynChoice {
  OffloadMode mode = OffloadMode::base;
  struct Profile {
    OffloadMode mode;
    bool fits;
    double seconds;  // one profiled iteration; 0 when not profiled
  };
  std::vector<Profile> profiles;
};

// Profiles on one batch, restores the trainer's state after each profiled
// iteration (so training is exactly as if nothing had run), and applies the
// choice. Throws DeviceError, naming the smallest budget, when no mode fits.
DynChoice choose_dyn(Trainer& trainer, const float* images, const std::int32_t* labels);

}  // namespace tidepool
