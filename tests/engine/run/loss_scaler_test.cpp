// fp16's loss-scale rule: halve on every skipped step, double after 2000
// good steps in a row (a skip starts the count again), and call the scale
// exhausted below 2^-24.
#include "engine/run/loss_scaler.h"

#include <gtest/gtest.h>

namespace tidepool {
namespace {

TEST(LossScaler, HalvesOnOverflowAndDoublesAfterItsGrowthInterval) {
  LossScaler s;
  EXPECT_EQ(s.scale(), 65536.0f);
  s.update(true);
  EXPECT_EQ(s.scale(), 32768.0f);
  for (std::int64_t i = 0; i < LossScaler::kGrowthInterval - 1; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 32768.0f) << "one step short of the interval";
  s.update(true);
  EXPECT_EQ(s.scale(), 16384.0f);
  for (std::int64_t i = 0; i < LossScaler::kGrowthInterval - 1; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 16384.0f) << "the skip restarted the count";
  s.update(false);
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.state().good_steps, 0);
  EXPECT_EQ(s.state().skipped_steps, 2);
}

TEST(LossScaler, StopsGrowingAtItsMaximum) {
  LossScaler s({.scale = LossScaler::kMaxScale, .good_steps = LossScaler::kGrowthInterval - 1});
  s.update(false);
  EXPECT_EQ(s.scale(), LossScaler::kMaxScale);
  EXPECT_EQ(s.state().good_steps, 0);
}

TEST(LossScaler, IsExhaustedOnlyBelowItsMinimum) {
  LossScaler s({.scale = 2.0f * LossScaler::kMinScale});
  s.update(true);
  EXPECT_FALSE(s.exhausted()) << "the minimum itself is still a scale";
  s.update(true);
  EXPECT_TRUE(s.exhausted());
}

}  // namespace
}  // namespace tidepool
