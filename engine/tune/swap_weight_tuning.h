// AutoSwap's bo weights: each try of the Bayesian search
// (engine/plan/swap_weight_search.h) is one timed iteration at the
// budget's load limit, and its overhead is against the iteration without
// offloads. The iterations run on devices from `make_device` (two: a device
// reserves its memory once): the sim device on the run's performance
// model, where 30 tries take seconds (the paper's 30 timed iterations take
// a training run's first minutes), or a real one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/core/network.h"
#include "engine/device/device.h"
#include "engine/schedule/memory_settings.h"
#include "engine/plan/swap_weight_search.h"

namespace tidepool {

// `settings`: mode autoswap with a budget (its other choices are kept).
// Throws std::invalid_argument for another mode or no budget, and
// MemoryRefusal when the budget cannot work at all.
SwapWeightSearch tune_swap_weights(const Network& network, std::int64_t batch, const MemorySettings& settings,
                                   const std::function<std::unique_ptr<Device>()>& make_device,
                                   const SwapWeightSearchOptions& options = {});

}  // namespace tidepool
