// best-fit: one pool; each request takes the smallest free block that fits,
// from its low end. Granularity: kAllocGranularity (256 B).
#include "engine/memory/allocators/single_pool.h"

namespace tidepool {
namespace {

class BestFitAllocator final : public SinglePoolAllocator {
 public:
  using SinglePoolAllocator::SinglePoolAllocator;
  std::string_view name() const override { return "best-fit"; }

 protected:
  std::optional<std::size_t> place(FreeList& free, std::size_t bytes, const AllocRequest& r) override {
    return free.take_best_fit(bytes);
  }
};

}  // namespace

std::unique_ptr<Allocator> make_best_fit_allocator(std::size_t pool_bytes) {
  return std::make_unique<BestFitAllocator>(pool_bytes);
}

}  // namespace tidepool
