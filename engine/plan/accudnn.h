// AccUDNN (Guo et al., seeds/004): the memory optimizer's stall model and
// the hyperparameter tuner, as pure functions of one iteration written as a
// sequence. The caller turns a schedule and a performance model into an
// AccProblem at a batch size k; these functions say when each layer can
// start (Algorithm 1), which feature maps to keep on the device so that
// none stalls (the inner loop of Algorithm 2), the largest batch that
// trains without stalls (Algorithm 2) and the learning rate to go with it
// (eq. 9).
//
//   AccProblem p = ...;                                  // at one batch
//   AccTimeline t = ready_times(p, {});                  // everything offloaded
//   AccChoice c = choose_pinned(p);                      // c.feasible, c.pinned
//   AccBatchSearch s = efficiency_optimal_batch(problem_at, k_max, {.step = 8});
//   double lr = adapted_learning_rate(0.1, 256, *s.batch, kAccudnnConvexity);
//
// The model (§3.3.2, §3.4, §5), with what the paper leaves open decided:
//
// - Three streams. Compute runs the layers in order. The swap-out stream
//   offloads each offloaded map once its `offload_after` layer finishes,
//   one at a time in the order they become ready (ties: map order), and
//   releases the map's memory when the copy completes. The swap-in stream
//   takes the layers in order and, for each, allocates everything the
//   layer places (AccLayer::alloc_bytes, the maps it produces, room for the
//   maps it fetches back), then prefetches those maps one after another;
//   t_ready is when the last of them has arrived. It goes on to the next
//   layer at once: it runs ahead of compute as far as memory allows.
// - Memory. Allocation is instant (the paper: "trivial"). When a layer's
//   allocation does not fit in the budget, the swap-in stream waits for
//   the earliest release after which it does: a layer's compute finishing
//   (AccLayer::release_bytes and the maps freed after it) or an offload
//   completing. That is Algorithm 1's search from j_current to
//   j_satisfied, with the swap-out stream's releases counted, which the
//   paper's remarks mention and its pseudocode leaves out. A layer for
//   which no release by the layers before it makes room never gets its
//   memory: the problem does not fit (t_ready is +infinity from there on).
// - Ours: a map is fetched back only after its offload has completed. The
//   paper's pseudocode does not say so; with memory to spare its swap-in
//   would run into the backward pass before the forward pass has produced
//   the maps. This only makes t_ready later, so a choice that is stall-free
//   here is stall-free under the paper's reading; it is what makes the map
//   offloaded just before it is needed (the last forward layer's input)
//   stall, as it does on a real device.
// - Ours: a layer waits for the offloads its AccLayer::waits_for_offloads
//   names (a pool places blocks, not bytes: where it reuses a block whose
//   copy may still run, the executor makes compute wait for it), a wait
//   counted as a stall.
// - A pinned map is never transferred: it is placed with its producer and
//   released when its `freed_after` layer finishes.
// - Time. A stall delays every layer after it: compute starts at
//   max(finish of the layer before, t_ready), and the releases, offloads
//   and waits that follow are timed on that delayed timeline. This is the
//   fixpoint of recomputing t_ready against the delayed finishes, reached
//   in one pass because a layer's readiness depends only on events of the
//   layers before it. Where nothing stalls it is the paper's plain Σ t, so
//   constraint (6), t_ready[j] ≤ Σ_{r<j} t_r, holds for every layer exactly
//   when every stall is zero; where layers stall, the later stalls are the
//   ones the delayed releases really cause rather than the paper's
//   optimistic figure.
//
// The problem's budget_bytes is what the sequence may use: the device
// budget less what stays for the whole iteration (parameters, their
// gradients, the input buffer: the paper's M_para and M_others).
//
// Everything here throws std::invalid_argument, with a message naming the
// layer or map, for a problem that means nothing (indices out of order,
// negative times, releases before allocations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tidepool {

// One of the 2N layers of an iteration (§3.1: forward and backward count
// separately), in execution order: forward, then backward.
struct AccLayer {
  std::string name;                // for messages and tables
  double compute_us = 0;           // t_j
  std::size_t alloc_bytes = 0;     // placed for it other than the maps (outputs, workspace, gradients)
  std::size_t release_bytes = 0;   // freed when its compute finishes, other than the maps
  // Ours, not the paper's: maps whose offload must have completed before
  // it starts, because the pool placed one of its blocks over bytes their
  // copies read (engine/memory/copy_waits.h). A pinned map is no wait.
  std::vector<int> waits_for_offloads;
};

// A feature map AccUDNN may offload (swap out after its last forward use,
// fetch back for backward) or pin on the device. Fields are layer indices.
struct AccFeatureMap {
  std::string name;
  std::size_t bytes = 0;
  int produced_by = 0;     // the layer that allocates it
  int offload_after = 0;   // its last forward use: the offload starts when this layer finishes
  int needed_by = 0;       // its first backward use: it must be back before this layer starts
  int freed_after = -1;    // its last use, after which it is released; -1: needed_by
  // Ours, not the paper's: the layer after whose finish the executor issues
  // the prefetch (its schedule's lookahead), so no earlier; -1: as soon as
  // the swap-in stream gets to it, as in the paper.
  int fetch_after = -1;
  double offload_us = 0;   // t_off, eq. 5, at this batch
  double prefetch_us = 0;  // t_pre
  // Ours: the pool kept its block parked until it was needed again
  // (engine/memory/parking.h), so it is offloaded but never fetched back,
  // and holds its memory until freed_after as a pinned map does.
  bool reclaimed = false;
};

struct AccProblem {
  std::vector<AccLayer> layers;
  std::vector<AccFeatureMap> maps;
  std::size_t budget_bytes = 0;
};

// Algorithm 1 and what follows from it, per layer j.
struct AccTimeline {
  bool fits = true;               // every layer gets its memory under the budget
  int unfit_layer = -1;           // the first that cannot (its times and all later ones are +infinity)
  std::vector<double> ready_us;   // t_ready[j]
  std::vector<double> start_us;   // compute start: max(finish_us[j-1], ready_us[j])
  std::vector<double> finish_us;
  std::vector<double> stall_us;   // start_us[j] - finish_us[j-1]: what constraint (6) forbids
  double iteration_us = 0;        // the last finish: the predicted iteration
  double total_stall_us = 0;
  std::size_t peak_bytes = 0;     // the most the sequence holds at once (at most the budget)
};

// `pinned`: one flag per map (empty: none pinned, everything offloaded).
AccTimeline ready_times(const AccProblem& problem, const std::vector<bool>& pinned);

// The stall the search accepts as none, as a fraction of the stall-free
// iteration Σ t_j: a profile's rounding makes an exact zero brittle, and
// 0.5% is below what one iteration's timing varies by.
inline constexpr double kStallTolerance = 0.005;

struct AccChoice {
  bool feasible = false;     // fits, and stalls no more than the tolerance
  std::vector<bool> pinned;  // per map
  AccTimeline timeline;      // with these pins
  // When not feasible: the layer that cannot get its memory, or the
  // stalled layer that no pin could help. -1 when feasible.
  int unresolved_layer = -1;
  std::size_t offloaded_bytes = 0;
  std::size_t pinned_bytes = 0;
};

// The inner loop of Algorithm 2 at one batch. Starts with every map
// offloaded (the paper's naive strategy, the most memory it can free) and,
// while the total stall is over the tolerance, pins one map at a time:
//  - the stalled layers in order of their stall, largest first (ties: the
//    earlier layer);
//  - for a layer, the maps whose prefetches its t_ready waited on: its
//    own, longest prefetch first, then those the swap-in stream fetched
//    just before without pausing since, the nearest first (the swap-in
//    stream is sequential, so each of them delays it);
//  - the first of those whose pinning still fits the budget and lowers the
//    total stall is pinned, and the timeline recomputed.
// A layer that stalls waiting for memory has no such map: pinning only
// holds more memory. When no stalled layer has a map that helps, the batch
// is infeasible (the paper then shrinks k). Pins are only ever added, so
// the loop ends after at most one round per map, and a round tries each
// map at most once: O(maps²) timelines at worst, one per pin when the
// first candidate helps, as it usually does.
AccChoice choose_pinned(const AccProblem& problem, double stall_tolerance = kStallTolerance);

// One row per batch Algorithm 2 evaluated, for the caller's table.
struct AccBatchRow {
  std::int64_t batch = 0;
  bool trainable = false;    // the caller had a problem at this batch and it fits with everything offloaded
  bool stall_free = false;   // choose_pinned found a feasible choice
  double iteration_us = 0;   // predicted, stalls included; +infinity where not trainable
  double images_per_s = 0;   // batch / iteration; 0 where not trainable
  double stall_us = 0;
  std::size_t offloaded_bytes = 0;
  std::size_t pinned_bytes = 0;
};

struct AccBatchSearchOptions {
  // The paper steps k down by 1 from k_max. With a larger step the scan
  // goes down by `step` to the first stall-free batch, then bisects
  // between it and the one above that was not: where stall-freedom is
  // monotone in k (every batch up to some k* works, none above) that is
  // the same k* in about k_max/step + log2(step) evaluations. Where it is
  // not, the step-1 scan is the paper's answer.
  std::int64_t step = 1;
  std::int64_t min_batch = 1;  // the scan goes no lower
  double stall_tolerance = kStallTolerance;
};

struct AccBatchSearch {
  std::optional<std::int64_t> batch;  // k*: the largest stall-free batch found; none if none was
  AccChoice choice;                   // its pins and timeline
  std::vector<AccBatchRow> table;     // every batch evaluated, largest first
};

// Algorithm 2: from k_max down, the largest batch whose choose_pinned is
// feasible, the efficiency-optimal minibatch of eq. 7 (the paper takes
// throughput to rise with k while nothing stalls). `problem_at(k)` is the
// problem at batch k, or nullopt where k cannot be trained at all. k_max,
// the largest batch that fits with everything offloaded, is the caller's.
AccBatchSearch efficiency_optimal_batch(const std::function<std::optional<AccProblem>(std::int64_t)>& problem_at,
                                        std::int64_t k_max, const AccBatchSearchOptions& options = {});

// Eq. 9, the learning rate for `batch` given one that trains well at
// `base_batch`: (1 - (1 - base_lr·c)^q) / c with q = batch / base_batch,
// from keeping the contraction factor of Bottou et al.'s Theorem 4.6 (the
// paper's [5]) per epoch (eq. 8, with μ ≈ 1). It is base_lr at q = 1,
// tends to linear scaling q·base_lr as c → 0 and grows more slowly the
// larger c is. Requires c > 0 and base_lr·c < 1.
double adapted_learning_rate(double base_lr, std::int64_t base_batch, std::int64_t batch, double convexity);

// The convexity c for which eq. 9 takes base_lr at q times the batch to
// target_lr, by bisection on (0, 1/base_lr): there eq. 9 is monotone in c,
// from q·base_lr (c → 0) to base_lr (c = 1/base_lr), falling for q > 1 and
// rising for q < 1. target_lr must lie strictly between those two; q = 1
// determines no c.
double convexity_from(double base_lr, double q, double target_lr);

// The paper does not say how it estimates c. Its one figure: ResNet-101 at
// total minibatch 592 trained with lr 0.22 (§6.3 D). From the common base of
// lr 0.1 at batch 256 (Goyal et al., the paper's [11]),
// convexity_from(0.1, 592/256, 0.22) = 0.747. The figure pins c loosely:
// 0.22 is given to two digits, and lr 0.215 to 0.225 would mean c from 1.08
// down to 0.41. Linear scaling would have given 0.231.
inline constexpr double kAccudnnConvexity = 0.747;

}  // namespace tidepool
