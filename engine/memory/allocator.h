// One interface for every memory-pool heuristic. An allocator hands out byte
// offsets inside one pool (the device arena, or nothing at all in a dry run),
// so the same policy code places tensors on the cpu device, on a GPU and in
// the planner's replay.
//
// Every request is rounded up to kAllocGranularity bytes
// (engine/schedule/alloc_granularity.h), the same for every
// policy (cudaMalloc and cnmem align to 256 bytes too), so that the memory
// load the planner predicts is the load every policy sees.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/schedule/alloc_granularity.h"

namespace tidepool {

// The part of a pool the policies place in: whole granules, so that a
// block placed at the top of a pool of any size (a budget of "1e9" bytes)
// still starts on a granule.
inline constexpr std::size_t usable_pool(std::size_t pool_bytes) {
  return pool_bytes / kAllocGranularity * kAllocGranularity;
}

struct AllocRequest {
  std::size_t bytes = 0;  // as asked; the allocator rounds up
  int tensor = -1;        // id in the plan's tensor table, for policies that learn per tensor
  Role role = Role::activation;
  bool will_offload = false;  // vDNN++'s high-end policy places these at the top
  // The stream the block is used on (a trace's stream; 0 for a schedule).
  // pytorch keeps its cached blocks per stream, as PyTorch does.
  int stream = 0;
};

// A pool now, as its policy sees it. The peaks of an iteration (peak load,
// footprint) are the replay loop's (engine/memory/replay.h: PoolFigures),
// computed from these as blocks come and go.
struct PoolStats {
  std::size_t pool_bytes = 0;
  std::size_t load_bytes = 0;        // bytes of live blocks (the memory load)
  std::size_t extent_bytes = 0;      // one past the highest live byte
  std::size_t largest_free_block_bytes = 0;  // inside the pool
  std::size_t free_holes = 0;                // free blocks inside the pool
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string_view name() const = 0;
  // The offset of a block of round_up(request.bytes) bytes, or nothing when
  // the policy cannot place it inside the pool.
  virtual std::optional<std::size_t> allocate(const AllocRequest& request) = 0;
  // Frees a block by the offset allocate() returned (throws std::logic_error
  // for an offset that is not live).
  virtual void free(std::size_t offset) = 0;
  virtual PoolStats stats() const = 0;
  // Where each pool after the first begins, ascending, for a policy that
  // claims several pools that never merge (cnmem): no free range crosses
  // one. Empty for the one-pool policies. Valid until the next call that
  // changes the allocator (the replay loop asks on every placement, so
  // it is a view, not a copy).
  virtual std::span<const std::size_t> pool_starts() const { return {}; }
  // After allocate(request) returned nothing: how many bytes the pool
  // lacked for it, what the pool search grows the pool by. By default the
  // rounded request less the largest free block; a policy that claims
  // more than the request when it grows (pytorch's segments) says what
  // its claim lacked.
  virtual std::size_t lacking_bytes(const AllocRequest& request) const {
    const std::size_t bytes = round_up(request.bytes), largest = stats().largest_free_block_bytes;
    return bytes > largest ? bytes - largest : 0;
  }
  // Makes the pool `pool_bytes` (more than now), after allocate() returned
  // nothing, where every decision so far would have been the same in the
  // larger pool: then the pool search goes on from the request that
  // failed instead of replaying everything before it again. False, and
  // nothing changed, for a policy whose placements depend on the pool's
  // size (best fit's top block, high-end's top end, an initial pool): the
  // default.
  virtual bool widen(std::size_t pool_bytes) {
    (void)pool_bytes;
    return false;
  }
  // After allocate(request) returned nothing: what the same request would
  // lack in a fresh replay of the same requests in a pool of `pool_bytes`
  // (more than now), told without replaying, where the policy knows every
  // decision before it would have been the same there and the request's
  // own outcome depends only on the room the larger pool adds. 0: it would
  // not fail there the same way (served, or an earlier request placed
  // otherwise: a replay must tell). Nothing: not known (the default). The
  // pool search steps over the pools that would fail at the same request,
  // as it would have by replaying each. It holds for a caller that asks
  // again between failures as long as it decides by the answers alone
  // (the replay loop gives back parked blocks and retries), and the pools
  // it counts as failing are one range: more than 0 for a pool means more
  // than 0 for every smaller pool above the current one (fails_alike_to).
  virtual std::optional<std::size_t> lacking_in_pool(std::size_t pool_bytes) const {
    (void)pool_bytes;
    return std::nullopt;
  }
};

// After `failed`, an allocator made with `pool_bytes`, returned nothing:
// the largest pool in which a fresh replay of the same requests is known
// to fail at the same request (lacking_in_pool's range), `pool_bytes`
// itself where nothing is known.
std::size_t fails_alike_to(const Allocator& failed, std::size_t pool_bytes);

// The policies by name, in this order. Every one rounds each request up to
// kAllocGranularity (256 B; pytorch to its 512), so every offset is a
// multiple of 256 B, and every one keeps all blocks inside [0, pool_bytes).
//
//   exact      the reference "one cudaMalloc per tensor" with no
//              fragmentation: stats() report extent = load, so its footprint
//              is the peak load, the lower bound no arena reaches. Its offsets are
//              best-fit's, so a real run works in a pool sized for them (the
//              pool search, not its reported footprint): a bounded replay or
//              the pool search sees best-fit's fragmentation.
//   cnmem      NVIDIA's CNMeM as vDNN++ describes it: best fit inside a
//              pool; when nothing fits, a new pool of exactly the request's
//              size is claimed above the last, and pools never merge. By
//              default the first pool is the first request's size (start
//              small, grow on demand: the setting vDNN++ calls not viable);
//              the two-argument factory below starts from a given initial
//              pool instead (vDNN++'s Table II: the aggregate peak load).
//              The footprint is the sum of the pools claimed. All pools go
//              back when the last live block is freed.
//   best-fit   the smallest free block that fits, from its low end.
//   first-fit  the lowest free block that fits, from its low end.
//   high-end   vDNN++'s non-offloaded high-end allocation: a request with
//              will_offload takes the highest free range that fits, every
//              other request is best fit from the low end, so a forward pass
//              ends with one used region at the bottom and one free block.
//              Its extent is the pool it is given (offloaded blocks sit at
//              the top), so its footprint is the pool search's result.
//   smartpool  SmartPool (Zhang et al.): learns the repeating sequence of
//              requests (keyed by size and AllocRequest::tensor), places one
//              period offline by lifetime (sizes descending, best fit among
//              the holes left by blocks whose lifetimes overlap; a few more
//              orders tried, the smallest footprint kept), then serves every
//              later request of the period by lookup; best fit while
//              learning or when a request departs from the learned
//              sequence. The second iteration of a schedule is already
//              served by lookup. Several periods are remembered (training
//              and evaluation alternating).
//   pytorch    PyTorch's CUDA caching allocator by its documented rules
//              (engine/memory/allocators/pytorch.cpp): 512-B rounding,
//              cached blocks per stream in a small (up to 1 MiB) and a
//              large pool, best fit, new segments of 2 MiB, 20 MiB or the
//              request rounded up to 2 MiB, its splitting rules, and the
//              cached segments freed before it fails. Its extent is the
//              reserved bytes (every segment's size); a segment is placed
//              in the lowest free range of the pool. The registry's is
//              PyTorch's defaults; make_pytorch_allocator
//              (allocators/pytorch.h) takes a PYTORCH_CUDA_ALLOC_CONF.
//              Since a segment is larger than its first request, it may
//              not serve a request as large as a small pool.
std::vector<std::string> allocator_names();
// Throws std::invalid_argument naming the valid policies for an unknown name.
// The policy places in usable_pool(pool_bytes).
std::unique_ptr<Allocator> make_allocator(std::string_view name, std::size_t pool_bytes);

// cnmem with an explicit first pool of round_up(initial_pool_bytes) bytes
// (at most the arena), claimed at once and again whenever everything has
// been freed; 0, the registry's default, claims none, so the first pool is
// the first request's size.
std::unique_ptr<Allocator> make_cnmem_allocator(std::size_t pool_bytes, std::size_t initial_pool_bytes);

// SmartPool keeps the layouts it placed for the last periods it learned,
// in the process, so that a plan's many replays place each period once.
// This empties them: for a benchmark that times placement, not lookups
// (forget_replays, replay_memo.h, empties the replays' answers).
void forget_smartpool_layouts();

// The most of a pool any registered policy claims to serve one request of
// `bytes` when nothing it holds serves it: the request's granules for
// most, a whole segment for pytorch (2 MiB for a 1-KB request).
// total_alloc_bytes (alloc_trace.h) sums it over a trace.
std::size_t most_claimed_bytes(std::size_t bytes);

}  // namespace tidepool
