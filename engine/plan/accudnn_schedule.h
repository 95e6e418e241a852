// AccUDNN on our schedules: a schedule as the paper's sequences
// (engine/plan/accudnn.h), timed by the performance model
// (engine/perf/perf_model.h), for three uses:
//   - predicting any plan's iteration time and stall (`plan`'s columns,
//     the window's Stats);
//   - mode accudnn: offload every feature map of `all` that goes without
//     stalling compute, keep (pin) on the device those that would stall;
//   - the efficiency-optimal batch (`tidepool tune`, `--batch --tune`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/core/network.h"
#include "engine/memory/copy_waits.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/accudnn.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

// The sequences of a train schedule: a layer per compute step (forward,
// backward, accumulate, update, and a data-parallel run's pack and unpack
// of each gradient bucket) timed by the model; a feature map per
// offloaded tensor, with its copy times and the layer after which the
// schedule issues its prefetch; every other allocation and free with the
// compute step it belongs to. `budget_bytes`: what the transient tensors
// may hold (the pool less the persistent bytes; 0: unlimited). The input
// batch's upload is left out, as the paper leaves it (pre-cached input).
struct AccSchedule {
  AccProblem problem;
  std::vector<int> map_tensor;  // per map, its tensor id in the schedule
};
// `waits`: where a run in a pool waits for offloads' copies (each layer's
// AccLayer::waits_for_offloads) and which maps come back without a copy
// (AccFeatureMap::reclaimed); none when null.
AccSchedule accudnn_problem(const Network& network, const Schedule& train, const PerfModel& model, const KernelQueries& queries,
                            std::size_t budget_bytes, const CopyWaits* waits = nullptr);

// What the model predicts for one iteration of a schedule as the executor
// runs it: every block is placed where the plan put it, so no prefetch
// waits for memory (Algorithm 1 with an unlimited budget); a prefetch
// starts when the executor issues it and its offload is done. In a pool
// (predict_in_pool), a layer whose block the pool places over bytes an
// offload's copy may still read also waits for that copy, and a tensor
// whose block stayed parked until backward comes back without a copy;
// without one (predict), no layer waits and every offload is fetched
// back. In a
// data-parallel schedule the buckets' all-reduces are taken to be hidden
// under backward: a PerfModel models one GPU and its host link, not the
// network between the ranks (the sim device's SimNetwork, which times them
// in a simulated run).
struct Prediction {
  double iteration_us = 0;
  double stall_us = 0;  // compute waiting for prefetches
  // The recompute steps' share of iteration_us, and the work they do again.
  double recompute_us = 0;
  double recompute_flops = 0;
};
Prediction predict(const Network& network, const Schedule& train, const PerfModel& model, const KernelQueries& queries);
// In a pool of `pool_bytes` under `heuristic`, parked as the plan parks
// in it (park_in, engine/memory/pool_search.h; `train`'s own horizon is
// not used): the prediction `plan` prints and hybrid weighs.
Prediction predict_in_pool(const Network& network, const Schedule& train, const PerfModel& model,
                           const KernelQueries& queries, std::string_view heuristic, std::size_t pool_bytes);
// The same for a caller that has the schedule's traces and the horizon
// park_in chose in this pool already (plan_memory).
Prediction predict_in_pool(const Network& network, const Schedule& train, const PerfModel& model,
                           const KernelQueries& queries, std::string_view heuristic, std::size_t pool_bytes,
                           const ScheduleTraces& traces, int park_horizon);

// Mode accudnn's choice at one batch: which of `all`'s tensors to offload
// (the rest stay on the device), by choose_pinned on `all`'s sequences in
// `pool_bytes` (0: unlimited). `feasible` false: some stall cannot be
// removed within the pool; the offloads are then the pins that helped.
struct AccudnnOffloads {
  std::vector<int> offloaded;  // tensor ids, ascending
  std::vector<int> pinned;
  bool feasible = false;
  Prediction predicted;
};
AccudnnOffloads choose_accudnn_offloads(const Network& network, const Schedule& all, const PerfModel& model,
                                        const KernelQueries& queries, std::size_t pool_bytes);

}  // namespace tidepool
