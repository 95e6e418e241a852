// exact: the reference "separate allocation per tensor" — what one
// cudaMalloc per tensor would cost if the device allocator never fragmented.
// Its footprint is the peak memory load by definition (the SmartPool paper's
// cudaMalloc baseline, competitive ratio 1), so it is the yardstick every
// other policy's competitive ratio is read against.
//
// Granularity: kAllocGranularity (256 B), like every policy, so the load it
// reports is the load every policy sees.
//
// An arena cannot actually achieve that: some sequences need more than the
// peak load whatever the placement (vDNN++ §III-B). So the offsets it hands
// out are best-fit's inside the pool — a real run on the cpu device or a GPU
// still gets non-overlapping blocks — while stats() report the ideal:
// extent_bytes = load_bytes (all live bytes, packed), so the replay loop's
// footprint is the peak load (a lower bound).
// The largest free block and the hole count stay those of the real offset
// space, because they describe what the next request can actually get; a
// bounded replay or the pool search therefore see best-fit's fragmentation,
// not the ideal.
#include "engine/memory/allocators/single_pool.h"

namespace tidepool {
namespace {

class ExactAllocator final : public SinglePoolAllocator {
 public:
  using SinglePoolAllocator::SinglePoolAllocator;
  std::string_view name() const override { return "exact"; }

  PoolStats stats() const override {
    PoolStats s = SinglePoolAllocator::stats();
    // The ideal: per-tensor allocations leave no gaps, so the used extent is
    // the load itself.
    s.extent_bytes = s.load_bytes;
    return s;
  }

 protected:
  std::optional<std::size_t> place(FreeList& free, std::size_t bytes, const AllocRequest& r) override {
    return free.take_best_fit(bytes);
  }
};

}  // namespace

std::unique_ptr<Allocator> make_exact_allocator(std::size_t pool_bytes) {
  return std::make_unique<ExactAllocator>(pool_bytes);
}

}  // namespace tidepool
