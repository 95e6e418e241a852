// high-end: vDNN++'s "non-offloaded high end allocation" (Shriram et al.,
// §IV-B). Granularity: kAllocGranularity (256 B), like every policy.
//
//   - A request with will_offload (a layer input that will be copied to the
//     host and released once the copy is done) takes the highest free range
//     that fits: the top of the highest free block large enough.
//   - Every other request is CNMeM's default best fit: the smallest free
//     block that fits, from its low end.
//
// Why: in a forward pass the offloaded inputs are temporary and the kept
// tensors are not. Placing the two kinds at opposite ends of the pool means
// that once the offloaded blocks have gone, the kept blocks form one used
// region at the bottom and the rest of the pool is a single free block, so
// the backward pass starts unfragmented. The kept tensors also sit in
// allocation order from the bottom, so backward, which frees them in
// reverse, releases them from the top of the used region down and opens no
// new holes; only prefetches and input gradients still fragment.
#include "engine/memory/allocators/single_pool.h"

namespace tidepool {
namespace {

class HighEndAllocator final : public SinglePoolAllocator {
 public:
  using SinglePoolAllocator::SinglePoolAllocator;
  std::string_view name() const override { return "high-end"; }

 protected:
  std::optional<std::size_t> place(FreeList& free, std::size_t bytes, const AllocRequest& r) override {
    return r.will_offload ? free.take_highest(bytes) : free.take_best_fit(bytes);
  }
};

}  // namespace

std::unique_ptr<Allocator> make_high_end_allocator(std::size_t pool_bytes) {
  return std::make_unique<HighEndAllocator>(pool_bytes);
}

}  // namespace tidepool
