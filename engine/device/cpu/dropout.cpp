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
#include "engine/device/cpu/parallel_loops.h"

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

// At p = 1 nothing is kept (u < 1 always), so the scale is never used;
// 0 keeps the arithmetic finite.
float keep_scale(float p) {
  if (!(p >= 0.0f && p <= 1.0f)) {
    throw std::invalid_argument("dropout: p must be in [0, 1], got " + std::to_string(p));
  }
  return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
}

}  // namespace

void CpuKernels::dropout_forward(std::int64_t count, float p, std::uint64_t seed, const float* x,
                                 float* y, float* mask) {
  const float scale = keep_scale(p);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) {
    mask[i] = uniform(seed, static_cast<std::uint64_t>(i)) >= p ? scale : 0.0f;
  }
  // Separate pass: the hash loop is scalar (AVX2 has no 64-bit multiply),
  // this one vectorises.
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] * mask[i];
}

void CpuKernels::dropout_forward_blocked(const ChannelBlocks& s, float p, std::uint64_t seed, const float* x,
                                         float* y, float* mask) {
  const float scale = keep_scale(p);
  if (!channel_blocked(s.c, s.block))
    throw std::invalid_argument("dropout: " + std::to_string(s.c) + " channels are not in blocks of " +
                                std::to_string(s.block));
  // Walk the blocked order, hash each element's NCHW index.
  const std::int64_t blocks = s.c / s.block;
  std::int64_t at = 0;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t cb = 0; cb < blocks; ++cb)
      for (std::int64_t hw = 0; hw < s.hw; ++hw)
        for (std::int64_t j = 0; j < s.block; ++j, ++at) {
          const auto i = static_cast<std::uint64_t>((n * s.c + cb * s.block + j) * s.hw + hw);
          mask[at] = uniform(seed, i) >= p ? scale : 0.0f;
        }
  const std::int64_t count = s.n * s.c * s.hw;
  for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] * mask[i];
}

void CpuKernels::dropout_backward(std::int64_t count, const float* mask, const float* dy,
                                  float* dx) {
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace tidepool
