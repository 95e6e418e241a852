// FNV-1a over bytes: the one hash Tidepool uses where bits must match, for
// the parameter checksum of summary.json, the seeds of the parameters, and
// the checksums that catch a damaged checkpoint or events file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tidepool {

inline constexpr std::uint64_t kFnv1aStart = 0xcbf29ce484222325ull;

// Continues `hash` over `bytes` bytes at `data` (start from kFnv1aStart).
std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t hash = kFnv1aStart);

}  // namespace tidepool
