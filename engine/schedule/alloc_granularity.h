// The granule every block of a pool is rounded up to, the same for every
// allocator policy (cudaMalloc and cnmem align to 256 bytes too), so that
// the memory load a schedule predicts (Schedule::peak_load_bytes,
// load_after_steps) is the load every policy sees (engine/memory/allocator.h).
#pragma once

#include <cstddef>

namespace tidepool {

inline constexpr std::size_t kAllocGranularity = 256;
inline constexpr std::size_t round_up(std::size_t bytes) {
  return (bytes + kAllocGranularity - 1) / kAllocGranularity * kAllocGranularity;
}

}  // namespace tidepool
