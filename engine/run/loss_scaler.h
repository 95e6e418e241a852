// fp16's dynamic loss scaling (Micikevicius et al., "Mixed Precision
// Training"; PyTorch's GradScaler has the same rule and defaults).
//
// IEEE half's smallest normal is 6.1e-5: most activation gradients of a
// CNN lie below it and would round to zero. So the gradient that enters
// backward (d loss / d logits) is multiplied by a scale S before it is
// rounded to 16 bits, every activation gradient carries the factor S, and
// the parameter gradients (f32) are divided by S before the update. When a
// gradient overflowed (any parameter gradient is NaN or ±inf), the update
// is skipped and S halves; after `growth_interval` good steps in a row, S
// doubles, up to 2^24. S is a power of two, so scaling and unscaling are
// exact.
//
// The executor applies a scale (IterationInputs::loss_scale) and reports
// whether the step was skipped (IterationResult::skipped); this class is
// the host's rule for the next scale. Its state is part of a run's
// checkpoint: a resumed run continues with the same scale.
//
//   LossScaler scaler;
//   in.loss_scale = scaler.scale();
//   scaler.update(executor.run(s, in).skipped);
#pragma once

#include <cstdint>

namespace tidepool {

struct LossScalerState {
  float scale = 65536.0f;         // 2^16, PyTorch's initial scale
  std::int64_t good_steps = 0;    // steps since the scale last changed, none skipped
  std::int64_t skipped_steps = 0;  // in the whole run
  bool operator==(const LossScalerState&) const = default;
};

class LossScaler {
 public:
  static constexpr std::int64_t kGrowthInterval = 2000;
  // A gradient that is not finite even at this scale is not an overflow but
  // a NaN from the numbers themselves: the run has diverged (2^-24 is
  // 40 halvings below the initial scale).
  static constexpr float kMinScale = 1.0f / (1 << 24);
  // Growth stops here: gradients that never overflow (all zero, say)
  // would otherwise double it to infinity, which no checkpoint can hold.
  // 2^24 times d loss / d logits overflows f16 anyway for any gradient
  // above 2^-8.
  static constexpr float kMaxScale = static_cast<float>(1 << 24);

  explicit LossScaler(LossScalerState state = {}) : state_(state) {}

  float scale() const { return state_.scale; }
  const LossScalerState& state() const { return state_; }

  // After a step: halve on a skipped one, double after kGrowthInterval
  // good ones in a row.
  void update(bool skipped) {
    if (skipped) {
      ++state_.skipped_steps;
      state_.good_steps = 0;
      state_.scale *= 0.5f;
      return;
    }
    if (++state_.good_steps >= kGrowthInterval) {
      state_.good_steps = 0;
      if (state_.scale < kMaxScale) state_.scale *= 2.0f;
    }
  }
  // Whether the scale has fallen below kMinScale: gradients that are not
  // finite at every scale.
  bool exhausted() const { return state_.scale < kMinScale; }

 private:
  LossScalerState state_;
};

}  // namespace tidepool
