// The schedule of one iteration: the planner's output and the executor's
// input. Because it is plain data, replaying it through an allocator without
// computing anything (a dry run) gives the exact address map, memory load
// and pool size a real run will have.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/device/device.h"
#include "engine/schedule/memory_settings.h"
#include "engine/device/kernel_shapes.h"
#include "engine/core/tensor.h"

namespace tidepool {

enum class StepKind : std::uint8_t {
  alloc,          // place `tensor` in the pool
  free,           // give `tensor`'s block back
  forward,        // run `node`'s forward kernels
  backward,       // run `node`'s backward kernels
  accumulate,     // tensor += source (the second and later gradients of a fan-out tensor)
  update,         // the optimiser step over every trainable parameter
  offload,        // copy `tensor` device → host on the offload stream
  prefetch,       // copy `tensor` host → device on the prefetch stream
  wait_offload,   // the compute stream waits until `tensor`'s offload is done
  wait_prefetch,  // the compute stream waits until `tensor`'s prefetch is done
  // Data-parallel training (Schedule::buckets): `tensor` is a bucket of
  // parameter gradients. all_reduce (comm stream) packs them into it on
  // the compute stream and sums it over the ranks on the comm stream;
  // wait_all_reduce (compute) waits for the sum and copies the average
  // back into the gradients.
  all_reduce,
  wait_all_reduce,
  // `node`'s forward kernels again, on the compute stream, writing its
  // output (`tensor`), which was freed after forward and is allocated
  // again just before: for a backward pass that reads it
  // (PlannedTensor::recomputed).
  recompute,
};
const char* to_string(StepKind k);

struct Step {
  StepKind kind = StepKind::alloc;
  Stream stream = Stream::compute;
  int node = -1;    // forward, backward
  int tensor = -1;  // alloc, free, accumulate (target), transfers, buckets
  int source = -1;  // accumulate; all_reduce and wait_all_reduce: the bucket's index in Schedule::buckets
  bool will_offload = false;  // alloc: the tensor leaves for the host later (high-end placement)
  // free: the tensor's copy to the host may still be reading the block
  // (async transfers), so it may be parked rather than given back at once
  // (engine/memory/parking.h); whether it is, is the schedule's
  // park_horizon.
  bool after_copy = false;
};

enum class Phase : std::uint8_t { train, eval };

struct PlanSettings {
  Phase phase = Phase::train;
  MemorySettings memory;
  // AutoSwap, AccUDNN and hybrid: the tensors to offload, chosen by the
  // MemoryPlan (engine/plan/memory_plan.h); none without a budget.
  std::vector<int> swapped;
  // Hybrid: the tensors to recompute (engine/plan/hybrid.h). The planner
  // recomputes those it can rebuild from tensors that stay on the device
  // and keeps the others.
  std::vector<int> recomputed;
};

struct PlannedTensor {
  TensorInfo info;
  // Parameters, their gradients and momenta live for the whole run; they are
  // placed once, before the first iteration, and never appear in `steps`.
  bool persistent = false;
  int node = -1;  // the layer it belongs to (-1 for data and labels)
  bool offloaded = false;        // copied to the host after forward, prefetched for backward
  // Freed after its last forward reader and computed again by its layer
  // (StepKind::recompute) before its first backward reader, from the
  // tensors that stayed on the device (OffloadMode::recompute*).
  bool recomputed = false;
  std::size_t host_offset = 0;   // its slot in the pinned region, when offloaded (uncompressed)
};

// Tensor ids a layer's kernels are called with (-1: none).
struct NodeTensors {
  std::vector<int> inputs;
  int output = -1;
  std::vector<int> params;       // in Layer::params() order
  std::vector<int> param_grads;  // -1 for non-trainable parameters
  std::vector<int> momenta;      // -1 for non-trainable parameters
  std::vector<int> saved;
  int forward_workspace = -1;
  int backward_workspace = -1;
  int output_grad = -1;
  std::vector<int> input_grads;  // where backward writes input i's gradient
  bool runs_backward = false;
  // --sync-bn on more than one rank (Schedule::syncs_statistics): the
  // doubles the forward and backward passes sum over the ranks
  // (Layer::rank_sums), in the step's workspace behind its f32 views
  // (rank_sums_bytes); 0: the pass runs whole on this rank's batch.
  std::size_t forward_rank_sums = 0, backward_rank_sums = 0;
  // Under --precision bf16|fp16: the step's kernels compute on its 16-bit
  // tensors as they are (Layer::has_16bit_kernels, KernelQueries::takes_16bit;
  // LayerArgs::dtype), so it
  // has no f32 copies (engine/step_calls/f32_views.h). Decided by the planner.
  bool computes_16bit = false;
};

// The workspace bytes `count` rank sums take: a multiple of 64, so that
// what follows them stays as aligned as the workspace is.
constexpr std::size_t rank_sums_bytes(std::size_t count) { return (count * sizeof(double) + 63) / 64 * 64; }

// Parameter gradients all-reduced together (PyTorch DDP's bucket): packed
// into `tensor`, a transient tensor of the plan, in backward order.
struct GradientBucket {
  int tensor = -1;
  std::vector<int> grads;
};

struct Schedule {
  std::int64_t batch = 0;
  PlanSettings settings;
  // The activation layout every layer call passes (LayerArgs::channel_block,
  // kernels.h channel_blocked): the planning table's channel_block().
  std::int64_t channel_block = 0;
  std::vector<PlannedTensor> tensors;
  std::vector<NodeTensors> nodes;
  // Persistent tensors in placement order. They are the first ids of the
  // table and the same for every schedule of one network, so the train and
  // eval schedules (and re-plans) share the parameters in place.
  std::vector<int> persistent;
  std::vector<Step> steps;
  int data = -1, labels = -1, loss = -1;
  // fp16 training: the update's overflow flag (one f32; Kernels::
  // unscale_check), alive around the update step; -1 without loss scaling.
  int overflow = -1;
  // Data-parallel training (MemorySettings::ranks > 1): the buckets the
  // parameter gradients are averaged over the ranks in, in the order
  // backward completes them; empty on one rank and in eval schedules.
  std::vector<GradientBucket> buckets;
  // Whether layers with rank sums (batch norm) normalise over every rank's
  // batch: --sync-bn in a training schedule of more than one rank.
  bool syncs_statistics() const {
    return settings.phase == Phase::train && settings.memory.sync_bn && settings.memory.ranks > 1;
  }

  // Predicted by summing rounded sizes over the steps (no allocator involved),
  // with every free at its planned step (the sync semantics).
  std::size_t persistent_bytes = 0;
  std::size_t peak_load_bytes = 0;  // persistent + the transient peak
  // Pinned host bytes the offloaded tensors need: slots are reused once a
  // tensor is back on the device. With compression, two staging slots of
  // the largest offloaded tensor: the offload stream copies into
  // [0, staging_bytes) and compresses from there, the prefetch stream
  // decompresses into [staging_bytes, 2 staging_bytes) and copies from
  // there; each stream runs its work in order, so one slot each suffices.
  std::size_t pinned_bytes = 0;
  std::size_t staging_bytes = 0;

  // Async transfers: how many offloaded tensors' blocks stay parked at once
  // after their planned free (after_copy steps), so that forward work does
  // not take them over, and wait for their copies, while those run
  // (engine/memory/parking.h). 0: none, such a block goes straight back to
  // the allocator and whatever takes it over first waits for its copy;
  // kParkUntilNeeded: every one, until the pool needs the room. The planner
  // leaves it at 0; the trainer picks the largest that a dry run in the
  // chosen pool shows fits (parking holds memory at the peak and can
  // fragment a tight pool, so the minimum pool is always the unparked one).
  int park_horizon = 0;
  // Whether any block could be parked at all (async offloads).
  bool can_park() const {
    return std::any_of(steps.begin(), steps.end(), [](const Step& st) { return st.after_copy; });
  }

  // The memory load right after each step (persistent bytes included).
  std::vector<std::size_t> load_after_steps() const;
  // Bytes one iteration copies to the host: each offloaded tensor once.
  std::size_t offloaded_bytes() const;
  // The recompute steps of one iteration.
  int recompute_steps() const;
};

}  // namespace tidepool
