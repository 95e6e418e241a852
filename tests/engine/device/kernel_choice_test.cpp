// The rules a device that chooses kernels by timing makes its choices by
// (engine/device/kernel_choice.h), on fake timings.
#include "engine/device/kernel_choice.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace tidepool {
namespace {

struct Timed {
  int algo = 0;
  int math = 0;
  float time_ms = 0;
};

// The pick over kTimingSearches searches of `searches[s][algo]` milliseconds.
int pick_of(const std::vector<std::vector<float>>& searches) {
  std::vector<Timed> timed;
  for (const std::vector<float>& search : searches)
    for (int algo = 0; algo < static_cast<int>(search.size()); ++algo) keep_best_time(timed, Timed{algo, 0, search[algo]});
  const std::size_t pick = pick_timed(timed);
  return timed[pick].algo;
}

TEST(KernelChoice, EachAlgorithmKeepsItsBestTimeOverTheSearches) {
  std::vector<Timed> timed;
  keep_best_time(timed, Timed{3, 0, 2.0f});
  keep_best_time(timed, Timed{3, 1, 5.0f});  // another math: another candidate
  keep_best_time(timed, Timed{3, 0, 1.5f});
  keep_best_time(timed, Timed{3, 0, 1.8f});
  ASSERT_EQ(timed.size(), 2u);
  EXPECT_EQ(timed[0].time_ms, 1.5f);
  EXPECT_EQ(timed[1].time_ms, 5.0f);
}

// Two processes whose searches differ by noise within the tie pick the same
// algorithm, though each finds another one fastest; a real gap picks the
// fastest, whatever its number.
TEST(KernelChoice, NoiseWithinTheTieDoesNotMoveThePickARealGapDoes) {
  const int here = pick_of({{1.00f, 0.97f, 3.0f}, {1.02f, 0.98f, 3.1f}, {1.01f, 0.99f, 2.9f}});
  const int there = pick_of({{0.99f, 1.03f, 3.0f}, {1.00f, 1.02f, 3.0f}, {1.05f, 1.01f, 3.0f}});
  EXPECT_EQ(here, 0) << "algorithm 1 is fastest here, but within the tie of 0";
  EXPECT_EQ(there, 0);
  EXPECT_EQ(pick_of({{1.0f, 0.5f, 3.0f}}), 1) << "0 is twice as slow as 1: no tie";
  EXPECT_EQ(pick_of({{3.0f, 2.0f, 1.0f * kTimingTie * 1.1f, 1.0f}}), 3)
      << "2 is just outside the tie of the fastest, 3";
  EXPECT_EQ(pick_of({{3.0f, 2.0f, 1.0f * kTimingTie, 1.0f}}), 2) << "2 is on the tie's edge: it counts";
}

TEST(KernelChoice, TheMathBreaksATieOfOneAlgorithm) {
  std::vector<Timed> timed = {{4, 1, 1.0f}, {4, 0, 1.05f}, {5, 0, 0.99f}};
  const std::size_t pick = pick_timed(timed);
  EXPECT_EQ(timed[pick].algo, 4);
  EXPECT_EQ(timed[pick].math, 0);
  EXPECT_EQ(timed.front().algo, 5) << "sorted fastest first";
}

TEST(KernelChoice, ALaterLineForAShapeWinsAndABadLineIsRefused) {
  KernelChoiceRecord record;
  EXPECT_EQ(record.adopted("forward n=1"), "");
  record.adopt({kernel_choice_line("forward n=1", "1 fma"), kernel_choice_line("forward n=2", "0 fma")});
  record.adopt({kernel_choice_line("forward n=1", "6 tensor-op")});  // the checkpoint's, after the machine's
  EXPECT_EQ(record.adopted("forward n=1"), "6 tensor-op");
  EXPECT_EQ(record.adopted("forward n=2"), "0 fma");
  try {
    record.adopt({"forward n=3: 1 fma"});
    FAIL() << "a line without ' -> ' was adopted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'forward n=3: 1 fma'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tidepool
