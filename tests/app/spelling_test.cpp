// "Did you mean" (app/spelling.h): slips are caught, other words are not
// turned into a wrong guess.
#include "app/spelling.h"

#include <gtest/gtest.h>

namespace tidepool::app {
namespace {

TEST(Spelling, CountsSwapsAsOneEditAndIgnoresCase) {
  EXPECT_EQ(edit_distance("veiw", "view"), 1);
  EXPECT_EQ(edit_distance("Best-Fit", "best-fit"), 0);
  EXPECT_EQ(edit_distance("plna", "plan"), 1);
  EXPECT_EQ(edit_distance("al", "all"), 1);
  EXPECT_EQ(edit_distance("", "abc"), 3);
}

TEST(Spelling, SuggestsOnlyNearWords) {
  const std::vector<std::string> commands = {"models", "plan", "replay", "profile", "tune", "view"};
  EXPECT_EQ(closest("veiw", commands), "view");
  EXPECT_EQ(closest("plann", commands), "plan");
  EXPECT_EQ(closest("profiel", commands), "profile");
  EXPECT_EQ(closest("r20", commands), "");  // a run folder, not a slip
  EXPECT_EQ(closest("train", commands), "");
  EXPECT_EQ(closest("--modle", {"--model", "--mode"}), "--model");
  EXPECT_EQ(closest("al", {"base", "all", "conv"}), "all");
  EXPECT_EQ(closest("xy", {"base", "all", "conv"}), "");
}

}  // namespace
}  // namespace tidepool::app
