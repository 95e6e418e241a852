// Batch norm's running statistics on the cpu device, PyTorch's way: one
// definition for the whole-batch pass (batchnorm.cpp) and the --sync-bn pass
// over every rank's sums (batchnorm_sums.cpp).
#pragma once

#include <cstdint>

#include "engine/device/kernels.h"

namespace tidepool {

// running = (1 - momentum) * running + momentum * batch, with the batch
// variance made unbiased over `count` values per channel; with a single
// value there is no spread to correct, so the batch variance (0) is used
// as is. Nothing to do when either running pointer is null (evaluation
// statistics are not tracked).
inline void update_running_statistics(const BatchNormShape& s, double count, const float* batch_mean,
                                      const float* batch_var, float* running_mean, float* running_var) {
  if (running_mean == nullptr || running_var == nullptr) return;
  const float unbias = count > 1.0 ? static_cast<float>(count / (count - 1.0)) : 1.0f;
  const float m = s.momentum;
  for (std::int64_t ch = 0; ch < s.c; ++ch) {
    running_mean[ch] = (1.0f - m) * running_mean[ch] + m * batch_mean[ch];
    running_var[ch] = (1.0f - m) * running_var[ch] + m * batch_var[ch] * unbias;
  }
}

}  // namespace tidepool
