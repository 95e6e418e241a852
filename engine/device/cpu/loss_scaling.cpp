// fp16's loss scaling (engine/run/loss_scaler.h): the flag's fill and the
// parameter gradients' unscaling with its non-finite check.
#include <cstdint>
#include <cstring>

#include "engine/device/cpu/cpu_kernels.h"

namespace tidepool {

void CpuKernels::fill(std::int64_t count, float value, float* y) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = value;
}

void CpuKernels::unscale_check(std::int64_t count, float* g, float inv_scale, float* overflow) {
  // A NaN or an infinity has every exponent bit set. Testing the bits of
  // all of them, without stopping early, lets the compiler vectorise.
  std::uint32_t bad = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &g[i], sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    g[i] *= inv_scale;
  }
  if (bad) *overflow = 1.0f;
}

}  // namespace tidepool
