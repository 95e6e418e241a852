// The free blocks of one pool, kept coalesced, with the queries the
// placement policies need. Blocks are [offset, offset + bytes).
//
// Both lists are vectors sorted by offset: a training iteration keeps tens
// of holes and about a hundred live blocks, where a linear scan over
// contiguous memory beats a node-based tree (std::map cost ~300 ns per
// alloc+free in bench_allocators, this layout well under 100 ns).
#pragma once

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
  explicit FreeList(std::size_t pool_bytes);

  // Each takes `bytes` out of a free block and returns its offset.
  // Best fit: the smallest block that fits (lowest offset among equals), from its low end.
  std::optional<std::size_t> take_best_fit(std::size_t bytes);
  // First fit: the lowest block that fits, from its low end.
  std::optional<std::size_t> take_first_fit(std::size_t bytes);
  // Highest: the highest block that fits, from its high end.
  std::optional<std::size_t> take_highest(std::size_t bytes);

  // Returns a block, merging it with free neighbours. Throws
  // std::logic_error for a block that overlaps free space or leaves the pool.
  void give_back(std::size_t offset, std::size_t bytes);

  std::size_t largest() const;
  std::size_t count() const { return blocks_.size(); }
  std::size_t pool_bytes() const { return pool_bytes_; }

 private:
  std::size_t take_low(std::size_t index, std::size_t bytes);

  std::size_t pool_bytes_;
  std::vector<Block> blocks_;  // by offset
  mutable std::optional<std::size_t> largest_;  // cached until the list changes
};

// The live blocks of one pool and the load figures derived from them.
class LiveBlocks {
 public:
  explicit LiveBlocks(std::size_t pool_bytes) : pool_bytes_(pool_bytes) {}
  void add(std::size_t offset, std::size_t bytes);
  // Returns the block's size; throws std::logic_error if `offset` is not live.
  std::size_t remove(std::size_t offset);
  // load, peak load, extent, peak extent (the rest of PoolStats is the free list's).
  template <class Stats>
  void fill(Stats& s) const {
    s.pool_bytes = pool_bytes_;
    s.load_bytes = load_;
    s.peak_load_bytes = peak_load_;
    s.extent_bytes = blocks_.empty() ? 0 : blocks_.back().end();
    s.peak_extent_bytes = peak_extent_;
  }

 private:
  std::size_t pool_bytes_;
  std::vector<Block> blocks_;  // by offset
  std::size_t load_ = 0, peak_load_ = 0, peak_extent_ = 0;
};

}  // namespace tidepool
