// The Stats view's rows: what a device that computes no values shows in
// place of numbers, the plan's prediction beside the iteration's times,
// and the planned peak broken down by role, in words and as its bar.
#include "ui/scene/stats_table.h"

#include <gtest/gtest.h>

#include "engine/plan/memory_facts.h"  // role_label
#include "ui/scene/colours.h"
#include "ui/scene/peak_breakdown.h"

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

TEST(StatsTable, ThePlannedPeakIsBrokenDownByRoleInABarAndInWords) {
  constexpr std::size_t MiB = std::size_t{1} << 20;
  SessionStatus s;
  EXPECT_TRUE(peak_bar(s.memory).empty()) << "nothing planned, nothing to draw";
  EXPECT_EQ(value(stats_table(s, {}), "planned peak load by role"), "<no row planned peak load by role>");
  s.memory.peak_load_bytes = 10 * MiB;
  s.memory.peak_load_by_role[static_cast<int>(Role::workspace)] = 1 * MiB;
  s.memory.peak_load_by_role[static_cast<int>(Role::activation)] = 6 * MiB;
  s.memory.peak_load_by_role[static_cast<int>(Role::weight)] = 3 * MiB;
  s.memory.parked_at_peak_bytes = 2 * MiB;

  // Roles in Role's order, so a role keeps its place as the runs change;
  // then, beside the load, the parked blocks (no holes: no part).
  const std::vector<PeakBarPart> parts = peak_bar(s.memory);
  ASSERT_EQ(parts.size(), 4u);
  const Role roles[] = {Role::activation, Role::weight, Role::workspace};
  std::size_t load = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(parts[i].label, role_label(roles[i]));
    EXPECT_EQ(parts[i].colour, role_colour(roles[i])) << parts[i].label;
    EXPECT_TRUE(parts[i].in_load) << parts[i].label;
    load += parts[i].bytes;
  }
  EXPECT_EQ(load, s.memory.peak_load_bytes);
  EXPECT_EQ(parts[3].label, "parked");
  EXPECT_EQ(parts[3].bytes, 2 * MiB);
  EXPECT_EQ(parts[3].colour, kParked);
  EXPECT_FALSE(parts[3].in_load);

  // The rows say it largest first.
  const auto rows = stats_table(s, {});
  EXPECT_EQ(value(rows, "planned peak load by role"),
            "activation 6.00 MiB (60 %), weight 3.00 MiB (30 %), workspace 1.00 MiB (10 %)");
  EXPECT_EQ(value(rows, "beside it, below the extent"), "2.00 MiB parked, 0 B in holes");
}

}  // namespace
}  // namespace tidepool::ui
