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

  // A larger pool only extends the free block at its top, which first fit
  // takes last, so every placement before a failing one stays where it
  // was: the pool lacks what its top block lacks. The default (the request
  // less the largest block anywhere) grows a pool whose largest hole lies
  // below the top a granule per replay when that hole is a granule short,
  // ending at this same size after thousands of replays (vgg16 recompute:
  // minutes).
  std::size_t lacking_bytes(const AllocRequest& r) const override {
    const std::size_t bytes = round_up(r.bytes);
    const std::vector<Block>& blocks = free_list().blocks();
    const std::size_t top =
        !blocks.empty() && blocks.back().end() == free_list().pool_bytes() ? blocks.back().bytes : 0;
    return bytes > top ? bytes - top : 0;
  }

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
