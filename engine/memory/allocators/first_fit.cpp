// first-fit: one pool; each request takes the lowest free block that fits,
// from its low end. Granularity: kAllocGranularity (256 B), like every
// policy.
//
// The classic alternative to best fit (Knuth's comparison; SmartPool's
// Fig. 4 contrasts the two when placing blocks offline). It keeps the live
// blocks packed towards offset 0, at the price of splitting the first
// large hole for a small request that a smaller hole higher up would have
// served exactly. The free list is short in practice (tens of holes), so
// the linear walk costs less than best fit's size index would save.
#include "engine/memory/allocators/single_pool.h"

namespace tidepool {
namespace {

class FirstFitAllocator final : public SinglePoolAllocator {
 public:
  using SinglePoolAllocator::SinglePoolAllocator;
  std::string_view name() const override { return "first-fit"; }

 protected:
  std::optional<std::size_t> place(FreeList& free, std::size_t bytes, const AllocRequest& r) override {
    return free.take_first_fit(bytes);
  }
};

}  // namespace

std::unique_ptr<Allocator> make_first_fit_allocator(std::size_t pool_bytes) {
  return std::make_unique<FirstFitAllocator>(pool_bytes);
}

}  // namespace tidepool
