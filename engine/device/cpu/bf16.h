// bf16 values one at a time, for the cpu device's plain loops: the upper
// half of an f32, rounded to nearest even by integer arithmetic, a NaN
// kept a (quiet) NaN. The same bits as oneDNN's bf16 rounding.
#pragma once

#include <cstdint>
#include <cstring>

namespace tidepool::cpu {

inline float from_bf16(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even: add just under half a unit of the kept part,
  // plus one when the kept part is odd.
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace tidepool::cpu
