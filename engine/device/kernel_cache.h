// Keys for the backends' per-shape caches (oneDNN primitives, cuDNN
// descriptors and algorithm choices): an op tag followed by every number
// that shapes the entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/device/kernels.h"

namespace tidepool {

using CacheKey = std::vector<std::int64_t>;

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& key) const noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::int64_t v : key) h ^= static_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h);
  }
};

// A convolution pass: `tag` is the backend's tag for convolutions.
inline CacheKey conv_key(std::int64_t tag, const ConvShape& s, ConvScheme scheme, ConvPass pass) {
  return {tag,      s.n,         s.c,      s.h,      s.w,      s.k,      s.r,
          s.s,      s.stride_h,  s.stride_w, s.pad_h, s.pad_w, s.dil_h,  s.dil_w,
          s.groups, s.bias ? 1 : 0, s.channel_block, static_cast<std::int64_t>(scheme),
          static_cast<std::int64_t>(pass), static_cast<std::int64_t>(s.dtype)};
}

}  // namespace tidepool
