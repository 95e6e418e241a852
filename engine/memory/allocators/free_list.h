// The free and the live blocks of one pool, with the queries the placement
// policies need: every policy keeps its pool in these two, so a free range
// is merged, split and measured by one piece of code. Blocks are
// [offset, offset + bytes).
//
// Both lists are vectors sorted by offset: a training iteration keeps tens
// of holes and about a hundred live blocks, where a linear scan over
// contiguous memory beats a node-based tree (std::map cost ~300 ns per
// alloc+free in bench_allocators, this layout well under 100 ns).
//
// The peaks of the load and the extent are not kept here: they are the
// replay loop's figures (engine/memory/replay.h), computed once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

namespace tidepool {

struct Block {
  std::size_t offset = 0, bytes = 0;
  std::size_t end() const { return offset + bytes; }
};

class FreeList {
 public:
  // [0, pool_bytes) free, or with `all_free` false nothing free yet (a
  // policy that claims its pools as it grows gives them back as they come).
  explicit FreeList(std::size_t pool_bytes, bool all_free = true);

  // Each takes `bytes` out of a free block and returns its offset.
  // Best fit: the smallest block that fits (lowest offset among equals), from its low end.
  std::optional<std::size_t> take_best_fit(std::size_t bytes);
  // First fit: the lowest block that fits, from its low end.
  std::optional<std::size_t> take_first_fit(std::size_t bytes);
  // Highest: the highest block that fits, from its high end.
  std::optional<std::size_t> take_highest(std::size_t bytes);
  // Exactly [offset, offset + bytes), when it lies wholly inside one free
  // block (a placement decided elsewhere: SmartPool's learned offsets).
  bool take_at(std::size_t offset, std::size_t bytes);

  // Returns a block, merging it with free neighbours (not across a fence).
  // Throws std::logic_error for a block that overlaps free space or leaves
  // the pool.
  void give_back(std::size_t offset, std::size_t bytes);
  // Free blocks on either side of `offset` never merge from now on (cnmem's
  // pools, each its own cudaMalloc). Fences go up in increasing order.
  void add_fence(std::size_t offset);

  std::size_t largest() const;
  std::size_t count() const { return blocks_.size(); }
  const std::vector<Block>& blocks() const { return blocks_; }  // by offset
  std::size_t pool_bytes() const { return pool_bytes_; }
  // The pool ends at `pool_bytes` (not less than now); nothing beyond the
  // old end is free (for a policy that claims its pools as it grows).
  void widen(std::size_t pool_bytes) { pool_bytes_ = std::max(pool_bytes_, pool_bytes); }

 private:
  // Removes [offset, offset + bytes) from the free block at `index`.
  void take_from(std::size_t index, std::size_t offset, std::size_t bytes);
  bool fenced(std::size_t offset) const;
  void grew(std::size_t bytes) {
    if (!largest_stale_ && bytes > largest_) largest_ = bytes;
  }

  std::size_t pool_bytes_;
  std::vector<Block> blocks_;         // by offset
  std::vector<std::size_t> fences_;   // ascending
  // The largest free block, kept as blocks merge; recomputed only after
  // the largest itself was cut.
  mutable std::size_t largest_ = 0;
  mutable bool largest_stale_ = false;
};

// The live blocks of one pool, by offset, each with a tag its policy may
// use (SmartPool: the request's index in its record; -1: none).
class LiveBlocks {
 public:
  struct Live {
    std::size_t offset = 0, bytes = 0;
    int tag = -1;
    std::size_t end() const { return offset + bytes; }
  };

  void add(std::size_t offset, std::size_t bytes, int tag = -1);
  // Removes the block at `offset` and returns it; throws std::logic_error
  // if `offset` is not live.
  Live remove(std::size_t offset);
  Live* find(std::size_t offset);

  std::size_t load_bytes() const { return load_; }
  // One past the highest live byte.
  std::size_t extent_bytes() const { return blocks_.empty() ? 0 : blocks_.back().end(); }
  const std::vector<Live>& blocks() const { return blocks_; }

 private:
  std::vector<Live> blocks_;  // by offset
  std::size_t load_ = 0;
};

}  // namespace tidepool
