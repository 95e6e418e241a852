// AccUDNN's hyperparameter tuner (§4) on the MemoryPlan: under a memory
// budget and a performance model, the largest batch that trains without
// offloading, the largest that trains with everything offloaded (k_max),
// the efficiency-optimal batch k* (Algorithm 2 over mode accudnn's
// choices), its swap strategy as the plan a run would execute, and the
// learning rate eq. 9 gives it. Pure planning: nothing runs on a device.
//
//   BatchTuning t = tune_batch(net, {.budget_bytes = 12ull << 30}, kernels, model, {.base_lr = 0.1, .base_batch = 256});
//   t.best, t.plan.summary(), t.lr
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "engine/core/network.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/accudnn.h"
#include "engine/plan/memory_plan.h"

namespace tidepool {

struct BatchTuningOptions {
  double base_lr = 0.1;             // a learning rate that trains well at base_batch ...
  std::int64_t base_batch = 128;    // ... which eq. 9 adapts to k*
  double convexity = kAccudnnConvexity;  // eq. 9's c (engine/plan/accudnn.h says how the default is estimated)
  std::int64_t most_batch = 1 << 16;     // the search goes no higher
  std::function<void(const std::string&)> progress;  // a line per stage
};

struct BatchTuning {
  std::int64_t largest_without_offload = 0;  // mode base fits the budget (0: not even batch 1)
  std::optional<Prediction> without_offload;  // predicted at that batch
  std::int64_t largest_with_offload = 0;     // k_max: mode all fits the budget
  AccBatchSearch search;                     // Algorithm 2: k* and every batch it evaluated
  std::optional<std::int64_t> best;          // k*, checked against the pool: a run at it fits
  std::optional<MemoryPlan> plan;            // mode accudnn at k*, as a run executes it
  double lr = 0;                             // eq. 9 at k*
};

// `settings`: the budget (required), heuristic, conv scheme and the rest of
// a run's memory settings; the mode is the tuner's. Throws
// std::invalid_argument without a budget, and MemoryRefusal when not even
// batch 1 fits with everything offloaded (naming the smallest budget).
BatchTuning tune_batch(const Network& network, const MemorySettings& settings, const KernelQueries& kernels,
                       const PerfModel& model, const BatchTuningOptions& options = {});

// The largest k in [1, most] for which fits(k), by doubling then
// bisecting (fits is taken to be monotone: true up to some k, false
// above); 0 when fits(1) is false.
std::int64_t largest_batch(const std::function<bool(std::int64_t)>& fits, std::int64_t most);

}  // namespace tidepool
