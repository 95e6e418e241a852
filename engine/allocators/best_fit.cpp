// best-fit: one pool; each request takes the smallest free block that fits,
// from its low end. Granularity: kAllocGranularity (256 B).
#include <stdexcept>

#include "engine/allocator.h"
#include "engine/allocators/free_list.h"

namespace tidepool {
namespace {

class BestFitAllocator final : public Allocator {
 public:
  explicit BestFitAllocator(std::size_t pool_bytes) : free_(pool_bytes), live_(pool_bytes) {}

  std::string_view name() const override { return "best-fit"; }

  std::optional<std::size_t> allocate(const AllocRequest& r) override {
    const std::size_t bytes = round_up(r.bytes);
    auto offset = free_.take_best_fit(bytes);
    if (offset) live_.add(*offset, bytes);
    return offset;
  }

  void free(std::size_t offset) override { free_.give_back(offset, live_.remove(offset)); }

  PoolStats stats() const override {
    PoolStats s;
    live_.fill(s);
    s.largest_free_block_bytes = free_.largest();
    s.free_holes = free_.count();
    return s;
  }

 private:
  FreeList free_;
  LiveBlocks live_;
};

}  // namespace

std::unique_ptr<Allocator> make_best_fit_allocator(std::size_t pool_bytes) {
  return std::make_unique<BestFitAllocator>(pool_bytes);
}

}  // namespace tidepool
