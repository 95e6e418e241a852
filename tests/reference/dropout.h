// Reference dropout, written from the recipe in kernels.h and
// engine/device/cpu/dropout.cpp rather than shared with the kernel, so a change to
// either spelling of the hash shows up as a test failure:
//   u = (splitmix64(seed ^ i) >> 40) * 2^-24, keep when u >= p,
//   mask = keep ? 1 / (1 - p) : 0.
#pragma once

#include <cstdint>

namespace tidepool::reference {

std::uint64_t splitmix64(std::uint64_t x);
bool dropout_keeps(std::uint64_t seed, std::uint64_t index, double p);
void dropout_forward(std::int64_t count, double p, std::uint64_t seed, const double* x, double* y,
                     double* mask);
void dropout_backward(std::int64_t count, const double* mask, const double* dy, double* dx);

}  // namespace tidepool::reference
