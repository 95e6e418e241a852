// When the cpu device's plain loops (elementwise, conversions, SGD) split
// over the OpenMP threads that oneDNN's primitives use too.
//
// Each element is computed by itself, so the split never changes a bit; it
// only pays off once a loop is long enough to cover the cost of waking the
// pool (a few microseconds): below kParallelElements a loop stays on the
// calling thread. The loops run on the compute stream's worker, whose
// OpenMP pool flushes denormals like the worker itself (denormals.h).
#pragma once

#include <cstdint>

namespace tidepool {

inline constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;

}  // namespace tidepool
