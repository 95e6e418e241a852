// The policies that keep one pool and differ only in where a request goes
// (best-fit, first-fit, high-end, exact) share their bookkeeping here; each
// file says only its placement rule.
#pragma once

#include <optional>

#include "engine/memory/allocator.h"
#include "engine/memory/allocators/free_list.h"

namespace tidepool {

class SinglePoolAllocator : public Allocator {
 public:
  explicit SinglePoolAllocator(std::size_t pool_bytes) : free_(pool_bytes) {}

  std::optional<std::size_t> allocate(const AllocRequest& r) final {
    const std::size_t bytes = round_up(r.bytes);
    const auto offset = place(free_, bytes, r);
    if (offset) live_.add(*offset, bytes);
    return offset;
  }

  void free(std::size_t offset) final { free_.give_back(offset, live_.remove(offset).bytes); }

  PoolStats stats() const override {
    PoolStats s;
    s.pool_bytes = free_.pool_bytes();
    s.load_bytes = live_.load_bytes();
    s.extent_bytes = live_.extent_bytes();
    s.largest_free_block_bytes = free_.largest();
    s.free_holes = free_.count();
    return s;
  }

 protected:
  // Takes `bytes` (already rounded) out of the free list, or nothing.
  virtual std::optional<std::size_t> place(FreeList& free, std::size_t bytes, const AllocRequest& r) = 0;
  const FreeList& free_list() const { return free_; }

 private:
  FreeList free_;
  LiveBlocks live_;
};

}  // namespace tidepool
