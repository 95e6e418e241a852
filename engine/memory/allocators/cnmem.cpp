// cnmem: NVIDIA's CNMeM pool as vDNN++ (Shriram et al., §III-B) describes
// it, the baseline vDNN++ measures against.
//
//   - Placement: best fit over every free block of every pool (the smallest
//     block that fits, lowest offset among equals), from the block's low
//     end — CNMeM's default heuristic.
//   - Growth: when no free block fits, CNMeM cudaMallocs a new pool of
//     exactly the requested size. Pools never merge: a free block at the end
//     of one pool and one at the start of the next stay two blocks, so a
//     request larger than either fails even though together they would
//     hold it ("an extra pool of size 100 MB would have sufficed ... if the
//     two pools were merged", Fig. 7).
//   - Initial pool: the registry's "cnmem" starts with no pool at all, so
//     its first pool is the first request's size and it grows request by
//     request — "starting with a small pool size and allowing CNMeM to grow
//     incrementally by calling cudaMalloc() is not a viable solution", the
//     setting vDNN++ criticises. make_cnmem_allocator(pool, initial) starts
//     from a pool of `initial` bytes instead (Table II's setting: the
//     aggregate peak load, which fragmentation still overruns).
//
// Offset space: the pools are laid out one after another from offset 0 in
// the order they were claimed, inside the arena of `pool_bytes` (the device
// budget); a request fails when its new pool would run past the arena. The
// footprint is what was claimed, the sum of the pool sizes, so
// stats().extent_bytes is the end of the last pool, not of the highest live
// block. The largest free block counts the unclaimed rest of the arena too,
// since a request that size is served by growing; that is what the pool
// search needs to know how far short the arena fell.
//
// Release: when the last live block is freed, every pool is given back and
// the state is the fresh one again (the initial pool, or none). With
// nothing live the two are indistinguishable to a caller, and it keeps the
// contract that freeing everything restores the whole arena. In training
// the parameters stay live, so this never happens mid-run.
//
// Granularity: kAllocGranularity (256 B), like every policy; a zero-byte
// request still takes one granule so every live block has its own offset.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/memory/allocators/free_list.h"

namespace tidepool {
namespace {

class CnmemAllocator final : public Allocator {
 public:
  CnmemAllocator(std::size_t pool_bytes, std::size_t initial_pool_bytes)
      : arena_(pool_bytes),
        initial_(std::min(round_up(initial_pool_bytes), pool_bytes / kAllocGranularity * kAllocGranularity)),
        free_(pool_bytes, /*all_free=*/false) {
    reset();
  }

  std::string_view name() const override { return "cnmem"; }

  std::optional<std::size_t> allocate(const AllocRequest& r) override {
    const std::size_t bytes = std::max(round_up(r.bytes), kAllocGranularity);
    // Best fit over the free blocks of every pool (the lowest among equals).
    std::optional<std::size_t> offset = free_.take_best_fit(bytes);
    if (!offset) {
      if (bytes > arena_ - claimed_) return std::nullopt;
      offset = claim(bytes);  // a new pool of exactly the request, wholly used by it
    }
    live_.add(*offset, bytes);
    return offset;
  }

  void free(std::size_t offset) override {
    const std::size_t bytes = live_.remove(offset).bytes;
    if (live_.load_bytes() == 0) {
      reset();
      return;
    }
    free_.give_back(offset, bytes);  // merged only inside its pool: the free list is fenced at each pool's start
  }

  // Without an initial pool nothing but the failure test reads the arena's
  // size: a pool is claimed only when no free block fits, and exactly the
  // request's size, so every placement before a failure is the same in a
  // larger arena.
  bool widen(std::size_t pool_bytes) override {
    if (initial_ > 0 || pool_bytes < arena_) return false;
    arena_ = pool_bytes;
    free_.widen(pool_bytes);
    return true;
  }

  std::span<const std::size_t> pool_starts() const override {
    if (pool_starts_.size() <= 1) return {};
    return std::span<const std::size_t>(pool_starts_).subspan(1);
  }

  PoolStats stats() const override {
    PoolStats s;
    s.pool_bytes = arena_;
    s.load_bytes = live_.load_bytes();
    s.extent_bytes = claimed_;
    const std::size_t unclaimed = arena_ - claimed_;
    s.largest_free_block_bytes = std::max(unclaimed, free_.largest());
    s.free_holes = free_.count() + (unclaimed > 0 ? 1 : 0);
    return s;
  }

 private:
  // Claims a new pool at the end of the claimed range and returns its start.
  std::size_t claim(std::size_t bytes) {
    const std::size_t start = claimed_;
    if (start > 0) free_.add_fence(start);  // pools never merge
    pool_starts_.push_back(start);  // claimed in increasing order: stays sorted
    claimed_ += bytes;
    return start;
  }

  void reset() {
    free_ = FreeList(arena_, /*all_free=*/false);  // the unclaimed arena is not a free block of any pool
    live_ = LiveBlocks();
    pool_starts_.clear();
    claimed_ = 0;
    if (initial_ > 0) free_.give_back(claim(initial_), initial_);
  }

  std::size_t arena_;
  std::size_t initial_;
  std::size_t claimed_ = 0;
  std::vector<std::size_t> pool_starts_;
  FreeList free_;     // free blocks inside the pools
  LiveBlocks live_;
};

}  // namespace

std::unique_ptr<Allocator> make_cnmem_allocator(std::size_t pool_bytes, std::size_t initial_pool_bytes) {
  return std::make_unique<CnmemAllocator>(usable_pool(pool_bytes), initial_pool_bytes);
}

std::unique_ptr<Allocator> make_cnmem_allocator(std::size_t pool_bytes) {
  return make_cnmem_allocator(pool_bytes, 0);
}

}  // namespace tidepool
