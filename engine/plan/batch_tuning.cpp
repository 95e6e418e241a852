#include "engine/plan/batch_tuning.h"

#include <algorithm>
#include <stdexcept>

#include "engine/core/bytes_text.h"
#include "engine/plan/planner.h"

namespace tidepool {

std::int64_t largest_batch(const std::function<bool(std::int64_t)>& fits, std::int64_t most) {
  if (most < 1 || !fits(1)) return 0;
  std::int64_t yes = 1, no = 0;
  while (yes < most) {
    const std::int64_t next = std::min(most, yes * 2);
    if (!fits(next)) {
      no = next;
      break;
    }
    yes = next;
  }
  if (no == 0) return yes;
  while (no - yes > 1) {
    const std::int64_t mid = yes + (no - yes) / 2;
    (fits(mid) ? yes : no) = mid;
  }
  return yes;
}

BatchTuning tune_batch(const Network& net, const MemorySettings& settings, const KernelQueries& kernels, const PerfModel& model,
                       const BatchTuningOptions& options) {
  if (!settings.budget_bytes)
    throw std::invalid_argument("tuning the batch needs a memory budget (--budget): the batch is what fits it");
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  auto fits = [&](OffloadMode mode) {
    return [&, mode](std::int64_t k) {
      MemorySettings m = settings;
      m.mode = mode;
      try {
        plan_memory(net, k, m, kernels);
        return true;
      } catch (const MemoryRefusal&) {
        return false;
      }
    };
  };
  BatchTuning t;
  t.largest_without_offload = largest_batch(fits(OffloadMode::base), options.most_batch);
  if (t.largest_without_offload) {
    MemorySettings base = settings;
    base.mode = OffloadMode::base;
    t.without_offload = plan_memory(net, t.largest_without_offload, base, kernels, {}, &model).predicted;
  }
  say("largest batch without offload: " + std::to_string(t.largest_without_offload));
  t.largest_with_offload = largest_batch(fits(OffloadMode::all), options.most_batch);
  if (!t.largest_with_offload) {
    MemorySettings all = settings;
    all.mode = OffloadMode::all;
    plan_memory(net, 1, all, kernels);  // throws the refusal, naming the smallest budget
  }
  say("largest batch with everything offloaded (k_max): " + std::to_string(t.largest_with_offload));

  PlanSettings all{Phase::train, settings, {}};
  all.memory.mode = OffloadMode::all;
  const std::int64_t k_max = t.largest_with_offload;
  AccBatchSearchOptions search;
  search.step = std::max<std::int64_t>(1, k_max / 32);  // ~32 scans, then bisection (accudnn.h)
  t.search = efficiency_optimal_batch(
      [&](std::int64_t k) -> std::optional<AccProblem> {
        if (k > k_max) return std::nullopt;
        return accudnn_problem(net, plan_schedule(net, k, all, kernels), model, kernels, settings.budget_bytes).problem;
      },
      k_max, search);
  // AccUDNN counts bytes; the pool places blocks, and where it cannot hold
  // every map AccUDNN keeps, the plan offloads some again, which may stall.
  // Step down from k* to the first batch whose accudnn plan keeps them all.
  // Where everything fits without offload, keeping everything is a
  // stall-free choice the greedy pinning may miss: k* is at least that.
  MemorySettings acc = settings;
  acc.mode = OffloadMode::accudnn;
  const std::int64_t from = std::max(t.search.batch.value_or(0), t.largest_without_offload);
  for (std::int64_t k = from; k >= 1 && !t.plan; --k) {
    try {
      MemoryPlan p = plan_memory(net, k, acc, kernels, {}, &model);
      if (!p.accudnn_stall_free) continue;
      t.plan = std::move(p);
      t.best = k;
    } catch (const MemoryRefusal&) {
    }
  }
  if (t.best) {
    t.lr = adapted_learning_rate(options.base_lr, options.base_batch, *t.best, options.convexity);
    say("efficiency-optimal batch k*: " + std::to_string(*t.best));
  } else {
    say("no batch trains without stalls in " + format_bytes(settings.budget_bytes));
  }
  return t;
}

}  // namespace tidepool
