// Deterministic parameter initialisation on the host. The generator is our
// own (splitmix64 + Box-Muller), not <random>'s distributions, whose output
// differs between standard libraries: the same seed gives the same network
// everywhere.
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/layer.h"

namespace tidepool {

void init_parameter(const ParamSpec& spec, std::uint64_t seed, std::span<float> out);

}  // namespace tidepool
