// The MemoryPlan: the one place that decides how a run uses memory. From a
// network, a batch size, the memory settings, the device's kernels (for
// workspace sizes) and what the device already holds for the run, it
// plans the train and eval schedules and decides the pool, the smallest
// workable pool, how many offloaded blocks stay parked, AutoSwap's load
// limit, and what to reserve; or it refuses, naming the smallest budget
// that works. Every figure comes from dry runs through the one replay loop
// (engine/memory/replay.h), so a real run with the plan observes exactly
// these figures.
//
//   MemoryPlan plan = plan_memory(net, 128, {.mode = OffloadMode::all, .budget_bytes = 900 << 20},
//                                 device.kernels(), {});
//   Trainer trainer(device, net, options, plan);         // executes it
//   trainer.apply(plan_memory(net, 128, other, device.kernels(), trainer.limits()));
//
// Its views: `tidepool plan`'s rows, summary.json, `--batch`'s memory line
// and the window's Stats all print a MemoryPlan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/network.h"
#include "engine/device/device.h"
#include "engine/device/kernel_queries.h"
#include "engine/memory/replay.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/accudnn_schedule.h"
#include "engine/schedule/memory_settings.h"
#include "engine/plan/memory_summary.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

// What the device already holds for the run. Before a run starts nothing
// is reserved, and the plan says what to reserve; later plans must fit it.
struct MemoryLimits {
  std::size_t arena_bytes = 0;         // device memory reserved (0: nothing yet)
  std::size_t offload_host_bytes = 0;  // host memory reserved for offloads' slots
  HostMemory host_memory = HostMemory::pinned;  // which kind that is
  // Reserve an arena a later budget may grow into (the window's budget
  // slider): room to keep everything on the device under any heuristic,
  // and a quarter more.
  bool room_to_grow = false;
};

struct MemoryPlan {
  MemorySettings settings;  // as asked (budget_bytes 0: what they need)
  std::int64_t batch = 0;
  Schedule train, eval;     // eval at the training batch
  std::size_t pool_bytes = 0;          // the pool the run gets: the budget, or needed_pool_bytes
  std::size_t needed_pool_bytes = 0;   // what these schedules need (vDNN++'s pool search, train and eval)
  std::size_t minimum_pool_bytes = 0;  // the smallest budget these settings work in
  // AutoSwap: the peak load its choice keeps under (0: none, nothing offloaded).
  std::size_t load_limit_bytes = 0;
  // Async offloads: a larger pool in which more blocks stay parked (one at
  // a time where none do now, else every one until needed); 0: none.
  std::size_t parking_pool_bytes = 0;
  // A steady-state iteration in the pool: peak load, footprint, largest
  // free block at the peak (engine/memory/replay.h defines them).
  PoolFigures figures;
  // With compression: the pinned memory the same offloads take uncompressed.
  std::size_t uncompressed_pinned_bytes = 0;
  // With a performance model: what it predicts for one train iteration in
  // the pool (engine/plan/accudnn_schedule.h).
  std::optional<Prediction> predicted;
  // Mode accudnn: the feature maps of `all` it keeps on the device (tensor
  // ids), and whether every stall could be removed in the budget.
  std::vector<int> accudnn_pinned;
  bool accudnn_stall_free = true;
  // Mode hybrid: what its choice came from (engine/plan/hybrid.h): "keep",
  // "mix", "peak mix", "tight mix", or the fixed mode that was faster in
  // the budget.
  std::string hybrid_from;
  // What a run that starts with this plan reserves (a run in progress: what it has).
  std::size_t arena_bytes = 0;
  // Room for mode all's offloads (compressed: its staging slots), in
  // pinned memory or, with HostMemory::pageable, in the pageable region.
  std::size_t offload_host_bytes = 0;
  // The executor's slot for the loss it reads back each iteration, in
  // pinned memory: a copy into pageable memory would hold the host until
  // the forward pass is done, before it has queued the backward pass.
  std::size_t readback_pinned_bytes = 0;

  int park_horizon() const { return train.park_horizon; }
  // The host memory the offloads take, by kind. The schedule's slots
  // (Schedule::pinned_bytes) are pinned, or with HostMemory::pageable
  // pageable, and then the pinned memory is the staging buffers every
  // copy to or from them passes through (engine/device/device.h).
  bool pageable() const { return settings.host_memory == HostMemory::pageable; }
  std::size_t pinned_bytes() const {
    if (!pageable()) return train.pinned_bytes;
    return train.pinned_bytes ? kPageableStagingBuffers * kPageableStagingBytes : 0;
  }
  std::size_t pageable_bytes() const { return pageable() ? train.pinned_bytes : 0; }
  std::size_t offloaded_bytes() const { return train.offloaded_bytes(); }
  std::size_t peak_load_bytes() const { return figures.peak_load_bytes; }
  std::size_t footprint_bytes() const { return figures.footprint_bytes; }
  std::size_t largest_free_at_peak_bytes() const { return figures.largest_free_at_peak.bytes; }
  // The host memory a run reserves beside the arena, as the plan lays it
  // out and the trainer only executes: one pinned region [the caller's
  // `staging_bytes` (its loaders' batches)][the loss read-back][the
  // offloads' slots], the slots in a pageable region of their own instead
  // where pageable() says so (the device then stages their copies, as the
  // CUDA driver does).
  struct HostLayout {
    std::size_t pinned_bytes = 0;  // the whole pinned region
    Range staging, readback;       // in it
    Range slots;                   // in it, or with `pageable_slots` the whole pageable region
    bool pageable_slots = false;
  };
  HostLayout host_layout(std::size_t staging_bytes) const {
    HostLayout l;
    l.staging = {0, staging_bytes};
    l.readback = {l.staging.end(), readback_pinned_bytes};
    l.pageable_slots = pageable();
    l.slots = {l.pageable_slots ? 0 : l.readback.end(), offload_host_bytes};
    l.pinned_bytes = l.pageable_slots ? l.readback.end() : l.slots.end();
    return l;
  }
  // What the runtime needs to know about a run in progress.
  MemoryLimits limits() const { return {arena_bytes, offload_host_bytes, settings.host_memory, false}; }
  // Its figures, as every view prints them.
  MemorySummary summary() const {
    return {pool_bytes,          needed_pool_bytes, minimum_pool_bytes, peak_load_bytes(),
            footprint_bytes(),   largest_free_at_peak_bytes(), offloaded_bytes(), pinned_bytes(),
            pageable_bytes(),    uncompressed_pinned_bytes, load_limit_bytes, park_horizon(), parking_pool_bytes,
            arena_bytes,         figures.peak_load_by_role, figures.parked_at_peak_bytes,
            figures.holes_at_peak_bytes};
  }
};

// A plan that cannot work: the message says why in the user's words and
// names the smallest budget that works.
class MemoryRefusal : public DeviceError {
 public:
  MemoryRefusal(const std::string& what, std::size_t minimum_pool_bytes)
      : DeviceError(what), minimum_pool_bytes_(minimum_pool_bytes) {}
  std::size_t minimum_pool_bytes() const { return minimum_pool_bytes_; }

 private:
  std::size_t minimum_pool_bytes_;
};

// `model`: the device's performance model, when there is one; mode
// accudnn needs it, and with it every plan carries its prediction.
// Throws std::invalid_argument for settings that mean nothing (an unknown
// heuristic, a negative lookahead, AutoSwap's bo with a negative weight,
// mode dyn, which profiling resolves first, mode accudnn without a model)
// and MemoryRefusal for a plan that does not fit.
MemoryPlan plan_memory(const Network& network, std::int64_t batch, const MemorySettings& settings, const KernelQueries& kernels,
                       const MemoryLimits& limits = {}, const PerfModel* model = nullptr);

// AutoSwap's train schedule for a load limit (0: none, nothing offloaded):
// `all`'s tensors ranked by settings.swap_score (bo: mixed by
// settings.swap_weights), chosen by the load model until its peak is under
// the limit, then more while the real schedule's peak is above.
// plan_memory searches the limit that fits the budget.
Schedule plan_autoswap(const Network& network, std::int64_t batch, const MemorySettings& settings, const KernelQueries& kernels,
                       std::size_t load_limit_bytes);

// The eval schedule at another batch size (a short last batch), to run in
// the plan's pool: smaller than the one the plan checked.
Schedule plan_eval(const Network& network, std::int64_t batch, const MemorySettings& settings, const KernelQueries& kernels);

}  // namespace tidepool
