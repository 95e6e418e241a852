// When the cpu device's plain loops (elementwise, conversions, SGD) split
// over the OpenMP threads that oneDNN's primitives use too.
//
// Each element is computed by itself, so the split never changes a bit; it
// only pays off once a loop is long enough to cover the cost of waking the
// pool (a few microseconds): below kParallelElements a loop stays on the
// calling thread. The loops run on the compute stream's worker, whose
// OpenMP pool flushes denormals like the worker itself (denormals.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tidepool {

inline constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;

// y = x, `count` elements of `size` bytes: one memcpy per thread where the
// ranges are apart and long, a memmove where they overlap, nothing where
// they are the same (elementwise.cpp: CpuKernels::copy, and convert within
// one type).
void copy_elements(std::int64_t count, std::size_t size, const void* x, void* y);

}  // namespace tidepool
