// AutoSwap: the priority scores are what the paper defines, the MemoryPlan
// takes as few tensors as bring the peak under the limit and offloads as
// little as the budget allows, without changing the numbers.
#include "engine/plan/autoswap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

#include "engine/memory/allocator.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/memory_plan.h"
#include "engine/plan/planner.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/networks.h"
#include "testing/training.h"

namespace tidepool {
namespace {

using testing::train_on_cpu;

struct Plans {
  Schedule base, all;
};
Plans plans(const Network& net, std::int64_t batch) {
  CpuKernels k;
  return {plan_schedule(net, batch, {}, k), plan_schedule(net, batch, {.memory = {.mode = OffloadMode::all}}, k)};
}

bool compute(StepKind k) {
  return k == StepKind::forward || k == StepKind::backward || k == StepKind::accumulate || k == StepKind::update;
}

TEST(AutoSwap, CandidatesAreAllsOffloadsThatSpanThePeak) {
  const Network net = testing::residual_net();
  const Plans p = plans(net, 16);
  const auto load = p.base.load_after_steps();
  const int peak = static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
  const auto order = autoswap_order(p.base, p.all, SwapScore::doa);
  ASSERT_FALSE(order.empty());
  std::set<int> seen;
  for (const SwapCandidate& c : order) {
    EXPECT_TRUE(p.all.tensors[c.tensor].offloaded) << p.base.tensors[c.tensor].info.name;
    EXPECT_LT(c.out_step, peak);
    EXPECT_GT(c.in_step, peak);
    EXPECT_EQ(p.base.steps[c.out_step].kind, StepKind::forward);
    EXPECT_EQ(p.base.steps[c.in_step].kind, StepKind::backward);
    EXPECT_TRUE(seen.insert(c.tensor).second) << "each candidate once";
  }
}

TEST(AutoSwap, ScoresFollowTheirDefinitions) {
  const Network net = testing::residual_net();
  const Plans p = plans(net, 16);
  const auto load = p.base.load_after_steps();
  auto doa = [&](const SwapCandidate& c) {
    double n = 0;
    for (int i = c.out_step + 1; i < c.in_step; ++i) n += compute(p.base.steps[i].kind);
    return n;
  };
  auto wdoa = [&](const SwapCandidate& c) {
    double area = 0;
    for (int i = c.out_step + 1; i < c.in_step; ++i)
      if (compute(p.base.steps[i].kind)) area += static_cast<double>(load[i]);
    return area;
  };
  for (SwapScore score : {SwapScore::doa, SwapScore::aoa, SwapScore::wdoa}) {
    SCOPED_TRACE(to_string(score));
    const auto order = autoswap_order(p.base, p.all, score);
    ASSERT_GE(order.size(), 3u);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const SwapCandidate& c = order[i];
      const double expected = score == SwapScore::doa   ? doa(c)
                              : score == SwapScore::aoa ? doa(c) * static_cast<double>(c.bytes)
                                                        : wdoa(c);
      EXPECT_DOUBLE_EQ(c.score, expected);
      if (i > 0) EXPECT_GE(order[i - 1].score, c.score) << "descending";
    }
  }
  // SWDOA: the first choice is WDOA's; each later one is the best on the
  // load that the choices before it leave.
  const auto sw = autoswap_order(p.base, p.all, SwapScore::swdoa);
  const auto w = autoswap_order(p.base, p.all, SwapScore::wdoa);
  ASSERT_EQ(sw.size(), w.size());
  EXPECT_EQ(sw.front().tensor, w.front().tensor);
  std::vector<double> curve(load.begin(), load.end());
  for (std::size_t i = 0; i < sw.size(); ++i) {
    double area = 0;
    for (int s = sw[i].out_step + 1; s < sw[i].in_step; ++s)
      if (compute(p.base.steps[s].kind)) area += curve[s];
    EXPECT_DOUBLE_EQ(sw[i].score, area) << "choice " << i;
    for (int s = sw[i].out_step + 1; s < sw[i].in_step; ++s)
      if (compute(p.base.steps[s].kind)) curve[s] -= static_cast<double>(sw[i].bytes);
  }
}

std::vector<int> tensors(const std::vector<SwapCandidate>& order) {
  std::vector<int> t;
  for (const SwapCandidate& c : order) t.push_back(c.tensor);
  return t;
}

// The mix on a real network's schedule: ResNet-20 has 38 candidates where
// residual_net has 3.
Network resnet20() { return models::make_model("resnet20", models::InputKind::cifar, 10); }

TEST(AutoSwap, BoWithOneWeightOrdersAsThatScore) {
  const Network net = resnet20();
  const Plans p = plans(net, 16);
  const std::pair<SwapWeights, SwapScore> alone[] = {
      {{1, 0, 0, 0}, SwapScore::aoa},
      {{0, 1, 0, 0}, SwapScore::doa},
      {{0, 0, 1, 0}, SwapScore::wdoa},
      {{0, 0, 0, 1}, SwapScore::swdoa},
  };
  for (const auto& [weights, score] : alone) {
    SCOPED_TRACE(to_string(score));
    const auto order = tensors(autoswap_order(p.base, p.all, score));
    ASSERT_GE(order.size(), 3u);
    EXPECT_EQ(tensors(autoswap_order(p.base, p.all, SwapScore::bo, weights)), order);
  }
  // AOA's order is not DOA's, so a weight picks which. (DOA, WDOA and
  // SWDOA agree here: on a network without long skips the candidates'
  // absences nest, the longer around the shorter; the next test tells
  // their terms apart by value.)
  EXPECT_NE(tensors(autoswap_order(p.base, p.all, SwapScore::aoa)),
            tensors(autoswap_order(p.base, p.all, SwapScore::doa)));
}

// Each score over its largest among the candidates on the load without
// swapping, SWDOA over WDOA's; with SWDOA in the mix, recomputed on the
// load the choices so far leave.
TEST(AutoSwap, BoMixesTheNormalisedScores) {
  const Network net = resnet20();
  const Plans p = plans(net, 16);
  const auto load = p.base.load_after_steps();
  auto doa = [&](const SwapCandidate& c) {
    double n = 0;
    for (int i = c.out_step + 1; i < c.in_step; ++i) n += compute(p.base.steps[i].kind);
    return n;
  };
  auto area = [&](const SwapCandidate& c, const std::vector<double>& curve) {
    double a = 0;
    for (int i = c.out_step + 1; i < c.in_step; ++i)
      if (compute(p.base.steps[i].kind)) a += curve[i];
    return a;
  };
  const std::vector<double> unswapped(load.begin(), load.end());
  double most_doa = 0, most_aoa = 0, most_wdoa = 0;
  for (const SwapCandidate& c : autoswap_order(p.base, p.all, SwapScore::doa)) {
    most_doa = std::max(most_doa, doa(c));
    most_aoa = std::max(most_aoa, doa(c) * static_cast<double>(c.bytes));
    most_wdoa = std::max(most_wdoa, area(c, unswapped));
  }
  // Weights that do not sum to 1: the mix scales them first.
  for (const SwapWeights w : {SwapWeights{1, 3, 6, 0}, SwapWeights{2, 1, 3, 4}}) {
    SCOPED_TRACE(::testing::Message() << w.aoa << " " << w.doa << " " << w.wdoa << " " << w.swdoa);
    const double sum = w.aoa + w.doa + w.wdoa + w.swdoa;
    const auto order = autoswap_order(p.base, p.all, SwapScore::bo, w);
    ASSERT_EQ(order.size(), autoswap_order(p.base, p.all, SwapScore::doa).size());
    std::vector<double> curve = unswapped;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const SwapCandidate& c = order[i];
      const double expected = (w.aoa * doa(c) * static_cast<double>(c.bytes) / most_aoa + w.doa * doa(c) / most_doa +
                               w.wdoa * area(c, unswapped) / most_wdoa + w.swdoa * area(c, curve) / most_wdoa) /
                              sum;
      EXPECT_NEAR(c.score, expected, 1e-12) << "choice " << i;
      if (w.swdoa == 0 && i > 0) EXPECT_GE(order[i - 1].score, c.score) << "a fixed mix: descending";
      for (int s = c.out_step + 1; s < c.in_step; ++s)
        if (compute(p.base.steps[s].kind)) curve[s] -= static_cast<double>(c.bytes);
    }
  }
}

TEST(AutoSwap, BoReadsOnlyTheWeightsRatios) {
  const Network net = resnet20();
  const Plans p = plans(net, 16);
  const auto equal = tensors(autoswap_order(p.base, p.all, SwapScore::bo, {0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(tensors(autoswap_order(p.base, p.all, SwapScore::bo, {2, 2, 2, 2})), equal);
  EXPECT_EQ(tensors(autoswap_order(p.base, p.all, SwapScore::bo, {0, 0, 0, 0})), equal) << "all zero: equal weights";
  EXPECT_EQ(normalised({2, 0, 6, 0}), (SwapWeights{0.25, 0, 0.75, 0}));
  EXPECT_THROW(autoswap_order(p.base, p.all, SwapScore::bo, {1, -0.5, 0, 0}), std::invalid_argument);
  EXPECT_THROW(normalised({1, 0, std::nan(""), 0}), std::invalid_argument);
  // Other scores do not read them.
  EXPECT_EQ(tensors(autoswap_order(p.base, p.all, SwapScore::wdoa, {1, -0.5, 0, 0})),
            tensors(autoswap_order(p.base, p.all, SwapScore::wdoa)));
}

TEST(AutoSwap, ThePlanKeepsToTheLimitWithBo) {
  const Network net = resnet20();
  const Plans p = plans(net, 16);
  CpuKernels k;
  const MemorySettings bo{.mode = OffloadMode::autoswap, .swap_score = SwapScore::bo, .swap_weights = {1, 0, 2, 1}};
  const Schedule lowest = plan_autoswap(net, 16, bo, k, 1);
  ASSERT_LT(lowest.peak_load_bytes, p.base.peak_load_bytes);
  const std::size_t limit = (lowest.peak_load_bytes + p.base.peak_load_bytes) / 2;
  const Schedule s = plan_autoswap(net, 16, bo, k, limit);
  EXPECT_LE(s.peak_load_bytes, limit);
  EXPECT_GT(s.offloaded_bytes(), 0u);
}

TEST(AutoSwap, ThePlanTakesAsFewAsBringThePeakUnderTheLimit) {
  const Network net = testing::residual_net();
  const Plans p = plans(net, 16);
  CpuKernels k;
  const Schedule lowest = plan_autoswap(net, 16, {}, k, 1);
  ASSERT_LT(lowest.peak_load_bytes, p.base.peak_load_bytes);
  const auto order = autoswap_order(p.base, p.all, SwapScore::swdoa);
  std::size_t previous = 0;
  for (int step = 0; step <= 8; ++step) {
    const std::size_t limit =
        lowest.peak_load_bytes + (p.base.peak_load_bytes - lowest.peak_load_bytes) * (8 - step) / 8;
    SCOPED_TRACE("limit " + std::to_string(limit));
    const Schedule s = plan_autoswap(net, 16, {}, k, limit);
    EXPECT_LE(s.peak_load_bytes, limit);
    // The model's choice, and more only where the real peak needed them.
    const std::vector<std::size_t> chosen = autoswap_choose(p.base, order, limit);
    for (std::size_t i : chosen) EXPECT_TRUE(s.tensors[order[i].tensor].offloaded) << order[i].tensor;
    std::size_t n = 0;
    for (const SwapCandidate& c : order) n += s.tensors[c.tensor].offloaded;
    EXPECT_GE(n, chosen.size());
    // None of the model's choice is redundant in the model.
    for (std::size_t drop : chosen) {
      std::vector<SwapCandidate> without;
      for (std::size_t i : chosen)
        if (i != drop) without.push_back(order[i]);
      EXPECT_EQ(autoswap_choose(p.base, without, limit).size(), without.size()) << "without " << drop;
    }
    const std::size_t bytes = s.offloaded_bytes();
    EXPECT_GE(bytes, previous) << "a lower limit offloads no less";
    previous = bytes;
  }
  EXPECT_EQ(plan_autoswap(net, 16, {}, k, 0).pinned_bytes, 0u) << "no limit: nothing offloaded";
}

// The paper's load model, worked out here: the load after each step of
// `base`, each candidate of `away` absent from the step after its last
// forward access to the step before its first backward access; the peak.
std::size_t modelled_peak(const Schedule& base, const std::vector<SwapCandidate>& away) {
  std::vector<std::size_t> load = base.load_after_steps();
  for (const SwapCandidate& c : away)
    for (int i = c.out_step + 1; i < c.in_step; ++i) load[static_cast<std::size_t>(i)] -= c.bytes;
  return *std::max_element(load.begin(), load.end());
}

// Where the greedy choice overshoots, the choice gives back what a later
// candidate covers: for every pair (a, b) where b alone brings the peak to
// a limit that a alone does not, the order (a, b) under that limit takes
// b alone, though the greedy pass took a first.
TEST(AutoSwap, TheChoiceGivesBackACandidateALaterOneCovers) {
  const Network net = testing::residual_net();
  const Plans p = plans(net, 16);
  const std::vector<SwapCandidate> order = autoswap_order(p.base, p.all, SwapScore::doa);
  const std::size_t peak = modelled_peak(p.base, {});
  int pairs = 0;
  for (const SwapCandidate& a : order)
    for (const SwapCandidate& b : order) {
      const std::size_t limit = modelled_peak(p.base, {b});
      if (a.tensor == b.tensor || limit >= peak || modelled_peak(p.base, {a}) <= limit) continue;
      ++pairs;
      EXPECT_EQ(autoswap_choose(p.base, {a, b}, limit), std::vector<std::size_t>{1})
          << p.base.tensors[a.tensor].info.name << " then " << p.base.tensors[b.tensor].info.name;
    }
  EXPECT_GT(pairs, 0) << "no pair of this network's candidates shows it";
}

TEST(AutoSwap, TheBudgetDecidesHowMuchIsOffloadedAndTheNumbersStay) {
  const Network net = testing::residual_net();
  const TrainerOptions base_options{.batch = 16, .seed = 2};
  const std::uint64_t base = train_on_cpu(net, base_options, 3).checksum;
  CpuDevice first, second;
  const std::size_t base_pool = Trainer(first, net, base_options).memory().pool_bytes;
  TrainerOptions o = base_options;
  o.memory.mode = OffloadMode::autoswap;
  const std::size_t least = Trainer(second, net, o).memory().minimum_pool_bytes;
  ASSERT_LT(least, base_pool);

  const testing::TrainingOutcome unbudgeted = train_on_cpu(net, o, 3);
  EXPECT_EQ(unbudgeted.checksum, base);
  EXPECT_EQ(unbudgeted.pinned_bytes, 0u) << "no budget: nothing offloaded";
  std::size_t previous = 0;
  for (std::size_t budget : {base_pool, (base_pool + least) / 2, least}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    o.memory.budget_bytes = budget;
    const testing::TrainingOutcome budgeted = train_on_cpu(net, o, 3);
    EXPECT_EQ(budgeted.checksum, base);
    EXPECT_GE(budgeted.pinned_bytes, previous) << "a smaller budget offloads no less";
    previous = budgeted.pinned_bytes;
  }
  EXPECT_GT(previous, 0u);
  o.memory.budget_bytes = least - 4096;
  try {
    train_on_cpu(net, o, 3);
    ADD_FAILURE() << "a budget below the least is refused";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("smallest budget that works"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tidepool
