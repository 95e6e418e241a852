// The planner turns a network, a batch size and the settings into the
// schedule of one iteration. It is pure: it asks the kernel table only for
// workspace sizes and runs nothing.
//
// Lifetimes: a tensor is allocated right before the step that first writes
// it and freed right after the step that last reads it; a tensor a backward
// pass reads is kept until that backward pass; activation gradients are
// freed as soon as the layer that consumes them has run backward.
#pragma once

#include <cstdint>

#include "engine/device/kernel_queries.h"
#include "engine/core/network.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

// One schedule. Everything that decides memory (the pool, parking,
// AutoSwap's choice) is the MemoryPlan's (engine/plan/memory_plan.h), which
// calls this; in mode autoswap the tensors offloaded are settings.swapped.
Schedule plan_schedule(const Network& network, std::int64_t batch, const PlanSettings& settings,
                       const KernelQueries& kernels);

}  // namespace tidepool
