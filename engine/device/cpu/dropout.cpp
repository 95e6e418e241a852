// Dropout with a counter-based mask: element i's fate depends on (seed, i)
// only, never on thread count, call order or device, so a recomputed or
// offloaded mask is bit-identical, and the cuda table draws the same mask.
//
// The exact recipe, which every device must follow:
//   h = splitmix64(seed ^ i)            (i = the element's index, 0-based)
//   u = (h >> 40) * 2^-24               (top 24 bits: a float in [0, 1))
//   keep = u >= p
//   mask = keep ? 1 / (1 - p) : 0,  y = x * mask
// splitmix64 here is the full generator step: add the golden-ratio gamma,
// then the two xor-shift-multiply rounds and the final xor-shift.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cpu/cpu_kernels.h"

namespace tidepool {
namespace {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// 24 bits is all a float's mantissa holds, so every value is exact and the
// comparison with p means the same thing on every device.
inline float uniform(std::uint64_t seed, std::uint64_t index) {
  return static_cast<float>(splitmix64(seed ^ index) >> 40) * 0x1.0p-24f;
}

}  // namespace

void CpuKernels::dropout_forward(std::int64_t count, float p, std::uint64_t seed, const float* x,
                                 float* y, float* mask) {
  if (!(p >= 0.0f && p <= 1.0f)) {
    throw std::invalid_argument("dropout: p must be in [0, 1], got " + std::to_string(p));
  }
  // At p = 1 nothing is kept (u < 1 always), so the scale is never used;
  // 0 keeps the arithmetic finite.
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (std::int64_t i = 0; i < count; ++i) {
    mask[i] = uniform(seed, static_cast<std::uint64_t>(i)) >= p ? scale : 0.0f;
  }
  // Separate pass: the hash loop is scalar (AVX2 has no 64-bit multiply),
  // this one vectorises.
  for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] * mask[i];
}

void CpuKernels::dropout_backward(std::int64_t count, const float* mask, const float* dy,
                                  float* dx) {
  for (std::int64_t i = 0; i < count; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace tidepool
