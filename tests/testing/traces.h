// Allocation traces written by hand (engine/memory/alloc_trace.h), for the
// allocator and pool-search tests that work through the papers' examples.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/memory/alloc_trace.h"

namespace tidepool::testing {

// `offload`: the block's tensor goes to the host (the allocators that
// place by it, vDNN++'s high-end, read the flag).
inline TraceEvent alloc(std::int64_t id, std::size_t bytes, bool offload = false) {
  return {TraceEvent::Kind::alloc, id, bytes, offload};
}

inline TraceEvent release(std::int64_t id) { return {TraceEvent::Kind::free, id, 0, false}; }

}  // namespace tidepool::testing
