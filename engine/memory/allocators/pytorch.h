// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) as
// a Tidepool heuristic: its size rules and its configuration, the part of
// it other code needs (the registry's claim per request, the commands that
// take a PYTORCH_CUDA_ALLOC_CONF string). The policy itself is
// allocators/pytorch.cpp; allocator.h explains the registry.
//
//   auto conf = parse_pytorch_alloc_conf("max_split_size_mb:128,expandable_segments:True");
//   auto allocator = make_pytorch_allocator(pool_bytes, conf);
//
// The registry's "pytorch" is make_pytorch_allocator(pool, {}): PyTorch's
// defaults (no max_split_size, no expandable segments).
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string_view>

#include "engine/memory/allocator.h"

namespace tidepool {

namespace pytorch {

// CUDACachingAllocator.cpp's constants, by their names there.
inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kMinBlockSize = 512;         // every size rounds up to a multiple of this
inline constexpr std::size_t kSmallSize = 1 * kMiB;       // the largest request of the small pool
inline constexpr std::size_t kSmallBuffer = 2 * kMiB;     // a small pool's segment (and expandable page)
inline constexpr std::size_t kLargeBuffer = 20 * kMiB;    // a large segment for requests below kMinLargeAlloc
inline constexpr std::size_t kMinLargeAlloc = 10 * kMiB;  // from here a segment is the request rounded up
inline constexpr std::size_t kRoundLarge = 2 * kMiB;      // ... to a multiple of this

// round_size: a request rounded up to kMinBlockSize, at least one
// (PyTorch's roundup_power2_divisions is not modelled: off by default).
std::size_t round_size(std::size_t bytes);
// get_allocation_size: the segment cudaMalloc'd for a rounded request that
// no cached block serves.
std::size_t allocation_size(std::size_t size);

}  // namespace pytorch

// The PYTORCH_CUDA_ALLOC_CONF options that change where memory goes, with
// PyTorch's defaults.
struct PytorchAllocConf {
  // max_split_size_mb: cached blocks this large are never split, and serve
  // only requests of at least this size that they exceed by less than
  // max_non_split_rounding. Unlimited by default.
  std::size_t max_split_size_bytes = std::numeric_limits<std::size_t>::max();
  // max_non_split_rounding_mb: that slack; kLargeBuffer by default.
  std::size_t max_non_split_rounding_bytes = pytorch::kLargeBuffer;
  // expandable_segments:True: one segment per stream and pool that grows
  // by pages (kSmallBuffer small, kLargeBuffer large) instead of a
  // cudaMalloc per segment.
  bool expandable_segments = false;
  bool operator==(const PytorchAllocConf&) const = default;
};

// Parses PyTorch's own syntax, "key:value,key:value" (spaces ignored), as
// PYTORCH_CUDA_ALLOC_CONF takes it. Throws std::invalid_argument naming
// the option for an unknown key, a bad value, or an option of PyTorch's
// that changes placement but is not modelled (garbage_collection_threshold,
// roundup_power2_divisions, backend:cudaMallocAsync). Options that do not
// touch device placement (pinned_*, release_lock_on_cudamalloc) are
// accepted and ignored.
PytorchAllocConf parse_pytorch_alloc_conf(std::string_view text);

// The pytorch policy under `conf`, placing in usable_pool(pool_bytes).
std::unique_ptr<Allocator> make_pytorch_allocator(std::size_t pool_bytes, const PytorchAllocConf& conf);

}  // namespace tidepool
