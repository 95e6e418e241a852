// One interface for every memory-pool heuristic. An allocator hands out byte
// offsets inside one pool (the device arena, or nothing at all in a dry run),
// so the same policy code places tensors on the cpu device, on a GPU and in
// the planner's replay.
//
// Every request is rounded up to kAllocGranularity bytes, the same for every
// policy (cudaMalloc and cnmem align to 256 bytes too), so that the memory
// load the planner predicts is the load every policy sees.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tensor.h"

namespace tidepool {

inline constexpr std::size_t kAllocGranularity = 256;
inline constexpr std::size_t round_up(std::size_t bytes) {
  return (bytes + kAllocGranularity - 1) / kAllocGranularity * kAllocGranularity;
}

struct AllocRequest {
  std::size_t bytes = 0;  // as asked; the allocator rounds up
  int tensor = -1;        // id in the plan's tensor table, for policies that learn per tensor
  Role role = Role::activation;
  bool will_offload = false;  // vDNN++'s high-end policy places these at the top
};

struct PoolStats {
  std::size_t pool_bytes = 0;
  std::size_t load_bytes = 0;        // bytes of live blocks (the memory load)
  std::size_t peak_load_bytes = 0;
  std::size_t extent_bytes = 0;      // one past the highest live byte
  std::size_t peak_extent_bytes = 0; // the footprint: the most of the pool ever used
  std::size_t largest_free_block_bytes = 0;  // inside the pool
  std::size_t free_holes = 0;                // free blocks inside the pool
  double competitive_ratio() const {
    return peak_load_bytes ? static_cast<double>(peak_extent_bytes) / peak_load_bytes : 1.0;
  }
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string_view name() const = 0;
  // The offset of a block of round_up(request.bytes) bytes, or nothing when
  // the policy cannot place it inside the pool.
  virtual std::optional<std::size_t> allocate(const AllocRequest& request) = 0;
  // Frees a block by the offset allocate() returned (throws std::logic_error
  // for an offset that is not live).
  virtual void free(std::size_t offset) = 0;
  virtual PoolStats stats() const = 0;
};

// The policies by name: "best-fit" (and the rest as they are added).
std::vector<std::string> allocator_names();
// Throws std::invalid_argument naming the valid policies for an unknown name.
std::unique_ptr<Allocator> make_allocator(std::string_view name, std::size_t pool_bytes);

}  // namespace tidepool
