// The Stats view's rows: what a device that computes no values shows in
// place of numbers, and the plan's prediction beside the iteration's times.
#include "ui/scene/stats_table.h"

#include <gtest/gtest.h>

namespace tidepool::ui {
namespace {

std::string value(const std::vector<StatsRow>& rows, const std::string& figure) {
  for (const StatsRow& r : rows)
    if (r.figure == figure) return r.value;
  return "<no row " + figure + ">";
}

IterationStats finished_iteration() {
  IterationStats st;
  st.iteration = 4;
  st.iteration_ms = 12.4;
  st.stall_ms = 1.5;
  return st;
}

TEST(StatsTable, TimesStandAloneWithoutAPrediction) {
  SessionStatus s;
  s.test_accuracy = 0.5f;
  const auto rows = stats_table(s, finished_iteration());
  EXPECT_EQ(value(rows, "last iteration"), "5") << "the event's iteration 4, counted from 1";
  EXPECT_EQ(value(rows, "iteration time"), "12.40 ms");
  EXPECT_EQ(value(rows, "stall time"), "1.50 ms");
  EXPECT_EQ(value(rows, "test accuracy"), "50.00 %");
}

TEST(StatsTable, AMeasuredRunShowsThePredictionBeside) {
  SessionStatus s;  // a real device planned with --profile
  s.predicted = PredictedIteration{.iteration_us = 11000, .stall_us = 250};
  const auto rows = stats_table(s, finished_iteration());
  EXPECT_EQ(value(rows, "iteration time"), "12.40 ms measured | 11.00 ms predicted");
  EXPECT_EQ(value(rows, "stall time"), "1.50 ms measured | 0.25 ms predicted");
}

TEST(StatsTable, ASimulatedRunHasNoNumbersAndSimulatedTimes) {
  SessionStatus s;
  s.computes_values = false;
  s.test_accuracy = 0;  // what an evaluation on the sim device would read back
  s.predicted = PredictedIteration{.iteration_us = 11000, .stall_us = 0};
  const auto rows = stats_table(s, finished_iteration());
  EXPECT_EQ(value(rows, "test accuracy"), kNoNumbers);
  EXPECT_EQ(value(rows, "iteration time"), "12.40 ms simulated | 11.00 ms predicted");
  EXPECT_EQ(value(rows, "stall time"), "1.50 ms simulated | 0.00 ms predicted");
  // Before the first iteration the prediction stands alone.
  const auto before = stats_table(s, {});
  EXPECT_EQ(value(before, "predicted iteration"), "11.00 ms, stalled 0.00 ms");
  EXPECT_EQ(value(before, "test accuracy"), kNoNumbers);
}

// --fuse relu changes the network a run trains: the run row says so.
TEST(StatsTable, TheRunRowSaysWhenReLUsAreFused) {
  SessionStatus s;
  s.settings.model = "resnet56";
  s.dataset_name = "generated";
  EXPECT_EQ(value(stats_table(s, finished_iteration()), "run"), "resnet56 on generated, batch 128");
  s.settings.fuse = Fusion::relu;
  EXPECT_EQ(value(stats_table(s, finished_iteration()), "run"), "resnet56 (ReLUs fused) on generated, batch 128");
}

TEST(StatsTable, Fp16ShowsItsLossScaleAndSkippedSteps) {
  SessionStatus s;
  EXPECT_EQ(value(stats_table(s, finished_iteration()), "fp16 loss scale"), "<no row fp16 loss scale>");
  s.loss_scale = LossScalerState{.scale = 16384.0f, .good_steps = 5, .skipped_steps = 2};
  EXPECT_EQ(value(stats_table(s, finished_iteration()), "fp16 loss scale"), "16384, 2 steps skipped (overflowed)");
}

}  // namespace
}  // namespace tidepool::ui
