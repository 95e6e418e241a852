// The search for AutoSwap's score mix: it finds a known best mix of a
// synthetic overhead in the paper's 30 tries, starts from the default and
// the four scores alone, and only ever hands the evaluator weights that
// sum to 1. Its use on a real schedule: AutoSwap's offloaded bytes at a
// load limit as the overhead.
#include "engine/plan/swap_weight_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/autoswap.h"
#include "engine/plan/planner.h"
#include "models/registry.h"

namespace tidepool {
namespace {

// 40 µs at `best`, rising with the squared distance from it to about 2 ms
// at the far corners of the simplex.
auto bowl(const SwapWeights& best) {
  return [best](const SwapWeights& w) {
    return 40.0 + 2000.0 * (std::pow(w.aoa - best.aoa, 2) + std::pow(w.doa - best.doa, 2) +
                            std::pow(w.wdoa - best.wdoa, 2) + std::pow(w.swdoa - best.swdoa, 2));
  };
}

TEST(SwapWeightSearch, FindsAKnownBestMix) {
  for (const SwapWeights best : {SwapWeights{0.1, 0.2, 0.6, 0.1}, SwapWeights{0.4, 0.0, 0.1, 0.5}}) {
    SCOPED_TRACE(::testing::Message() << best.aoa << " " << best.doa << " " << best.wdoa << " " << best.swdoa);
    const SwapWeightSearch s = search_swap_weights(bowl(best));
    EXPECT_EQ(s.history.size(), 30u);
    EXPECT_LT(s.overhead_us, 41.0) << "within 1 µs of the minimum";
    EXPECT_NEAR(s.best.aoa, best.aoa, 0.02);
    EXPECT_NEAR(s.best.doa, best.doa, 0.02);
    EXPECT_NEAR(s.best.wdoa, best.wdoa, 0.02);
    EXPECT_NEAR(s.best.swdoa, best.swdoa, 0.02);
  }
}

TEST(SwapWeightSearch, StartsFromEqualWeightsAndEachScoreAlone) {
  const SwapWeightSearch s = search_swap_weights(bowl({0.1, 0.2, 0.6, 0.1}), {.evaluations = 5});
  ASSERT_EQ(s.history.size(), 5u);
  const SwapWeights expected[] = {{0.25, 0.25, 0.25, 0.25}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
  for (std::size_t i = 0; i < 5; ++i) {
    const SwapWeights& w = s.history[i].weights;
    EXPECT_NEAR(w.aoa, expected[i].aoa, 1e-12) << "try " << i;
    EXPECT_NEAR(w.doa, expected[i].doa, 1e-12) << "try " << i;
    EXPECT_NEAR(w.wdoa, expected[i].wdoa, 1e-12) << "try " << i;
    EXPECT_NEAR(w.swdoa, expected[i].swdoa, 1e-12) << "try " << i;
  }
}

TEST(SwapWeightSearch, TheEvaluatorSeesWeightsThatSumToOne) {
  int tries = 0;
  const SwapWeightSearch s = search_swap_weights([&](const SwapWeights& w) {
    ++tries;
    EXPECT_NEAR(w.aoa + w.doa + w.wdoa + w.swdoa, 1.0, 1e-12);
    for (double x : {w.aoa, w.doa, w.wdoa, w.swdoa}) EXPECT_GE(x, 0.0);
    return bowl({0.4, 0.0, 0.1, 0.5})(w);
  });
  EXPECT_EQ(tries, 30);
  double lowest = std::numeric_limits<double>::infinity();
  for (const SwapWeightTrial& t : s.history) lowest = std::min(lowest, t.overhead_us);
  EXPECT_EQ(s.overhead_us, lowest);
}

TEST(SwapWeightSearch, RefusesNoEvaluations) {
  EXPECT_THROW(search_swap_weights(bowl({}), {.evaluations = 0}), std::invalid_argument);
}

// The offloaded bytes at a load limit stand in for the overhead (less to
// copy, less to hide): the search's mix offloads no more than the best of
// the four scores, and the mix it reports is the one that gave its bytes.
TEST(SwapWeightSearch, OnARealScheduleDoesNoWorseThanTheScoresAlone) {
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  CpuKernels k;
  const Schedule base = plan_schedule(net, 16, {}, k);
  const Schedule all = plan_schedule(net, 16, {.memory = {.mode = OffloadMode::all}}, k);
  auto offloaded = [&](SwapScore score, const SwapWeights& w, std::size_t limit) {
    const std::vector<SwapCandidate> order = autoswap_order(base, all, score, w);
    std::size_t bytes = 0;
    for (std::size_t i : autoswap_choose(base, order, limit)) bytes += order[i].bytes;
    return bytes;
  };
  // A limit that takes several tensors: a quarter of the way from the peak
  // down to the least every candidate leaves.
  std::size_t every = 0;
  for (const SwapCandidate& c : autoswap_order(base, all, SwapScore::doa)) every += c.bytes;
  const std::size_t limit = base.peak_load_bytes - every / 4;
  std::size_t best_alone = std::numeric_limits<std::size_t>::max();
  for (SwapScore score : {SwapScore::aoa, SwapScore::doa, SwapScore::wdoa, SwapScore::swdoa})
    best_alone = std::min(best_alone, offloaded(score, {}, limit));
  ASSERT_GT(best_alone, 0u);

  const SwapWeightSearch s = search_swap_weights(
      [&](const SwapWeights& w) { return static_cast<double>(offloaded(SwapScore::bo, w, limit)); });
  EXPECT_LE(s.overhead_us, static_cast<double>(best_alone));
  EXPECT_EQ(s.overhead_us, static_cast<double>(offloaded(SwapScore::bo, s.best, limit)));
}

}  // namespace
}  // namespace tidepool
