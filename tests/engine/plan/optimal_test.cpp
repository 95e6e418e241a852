// `plan --optimal`'s integer programme (engine/plan/optimal.h): on a
// network small enough to try every keep / offload / recompute choice,
// CBC's optimum is the cheapest choice that saves enough at every step;
// its schedule trains base's bits; and the command says how far hybrid is
// from it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/fusion.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/gpu_queries.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/hybrid.h"
#include "engine/plan/optimal.h"
#include "engine/plan/planner.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/run_here.h"

namespace tidepool {
namespace {

struct SlowLinkV100 {  // offloads that cost, so that the choice is a real one
  Profile profile = [] {
    Profile p = *specification_profile("v100");
    p.to_host.gbps /= 1000;
    p.to_device.gbps /= 1000;
    return p;
  }();
  PerfModel model{profile};
  GpuQueries queries{profile.gpu};
};

// Every choice, tried: the least cost of one that keeps what recomputes
// read and saves enough at every step (the programme, written out plainly).
double cheapest_by_enumeration(const WaysOff& ways, std::size_t limit) {
  const std::vector<WayOff>& w = ways.tensors;
  const std::vector<std::size_t> load = ways.keep.load_after_steps();
  std::vector<int> way(w.size(), 0);  // 0 keep, 1 offload, 2 recompute
  double best = std::numeric_limits<double>::infinity();
  for (;;) {
    double cost = 0;
    bool ok = true;
    for (std::size_t i = 0; i < w.size() && ok; ++i) {
      if (way[i] == 1) ok = std::isfinite(w[i].offload_us), cost += w[i].offload_us;
      if (way[i] == 2) {
        ok = std::isfinite(w[i].recompute_us);
        cost += w[i].recompute_us;
        for (int x : w[i].reads)
          for (std::size_t j = 0; j < w.size(); ++j)
            if (w[j].tensor == x && way[j] != 0) ok = false;
      }
    }
    for (std::size_t k = 0; k < load.size() && ok; ++k) {
      double saved = 0;
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (static_cast<int>(k) <= w[i].last_forward_step) continue;
        if (way[i] == 1 && static_cast<int>(k) < w[i].prefetch_step) saved += static_cast<double>(w[i].bytes);
        if (way[i] == 2 && static_cast<int>(k) < w[i].first_backward_step) saved += static_cast<double>(w[i].bytes);
      }
      ok = static_cast<double>(load[k]) - saved <= static_cast<double>(limit);
    }
    if (ok) best = std::min(best, cost);
    std::size_t i = 0;
    while (i < way.size() && ++way[i] == 3) way[i++] = 0;
    if (i == way.size()) break;
  }
  return best;
}

TEST(Optimal, CbcFindsTheCheapestChoiceEveryChoiceTriedFinds) {
  const SlowLinkV100 gpu;
  const Network net = fuse(testing::basic_block_net(), Fusion::relu);
  const PlanSettings keep{.memory = {.mode = OffloadMode::hybrid}};
  const WaysOff ways = ways_off(net, 16, keep, gpu.queries, gpu.model);
  ASSERT_GE(ways.tensors.size(), 5u);
  ASSERT_LE(ways.tensors.size(), 11u) << "3^n choices to try";
  const Schedule base = plan_schedule(net, 16, keep, gpu.queries);
  int solved = 0;
  for (int percent : {95, 85, 75, 65}) {
    PlanSettings in_budget = keep;
    in_budget.memory.budget_bytes =
        base.persistent_bytes + (base.peak_load_bytes - base.persistent_bytes) / 100 * static_cast<std::size_t>(percent);
    const OptimalChoice o = solve_optimal(net, 16, in_budget, gpu.queries, gpu.model, 60);
    if (!o.feasible) {  // then nothing in the budget saves enough
      EXPECT_FALSE(std::isfinite(cheapest_by_enumeration(ways, in_budget.memory.budget_bytes))) << percent << " %";
      continue;
    }
    // At the limit it was solved for (lower than the budget where the pool missed).
    const double cheapest = cheapest_by_enumeration(ways, o.limit_bytes);
    EXPECT_TRUE(o.proven) << percent << " %: objective " << o.objective_us << ", bound " << o.bound_us;
    EXPECT_NEAR(o.objective_us, cheapest, 1e-6 * std::max(1.0, cheapest)) << percent << " %";
    ++solved;
  }
  EXPECT_GT(solved, 0);
}

// The choice is planned as mode hybrid's lists (whose runs train base's
// bits: hybrid_test.cpp): the schedule offloads and recomputes what the
// solution says, and fits the budget.
TEST(Optimal, ItsChoiceIsPlannedAsHybridsListsInTheBudget) {
  const SlowLinkV100 gpu;
  const Network net = fuse(models::make_model("resnet20", models::InputKind::cifar, 10), Fusion::relu);
  const Schedule base = plan_schedule(net, 64, {}, gpu.queries);
  const PlanSettings train{.memory = {.mode = OffloadMode::hybrid, .budget_bytes = base.peak_load_bytes * 7 / 10}};
  const OptimalChoice o = solve_optimal(net, 64, train, gpu.queries, gpu.model, 60);
  ASSERT_TRUE(o.feasible);
  EXPECT_TRUE(o.fits);
  EXPECT_EQ(o.train.settings.memory.mode, OffloadMode::hybrid);
  int offloaded = 0, recomputed = 0;
  for (const PlannedTensor& t : o.train.tensors) offloaded += t.offloaded, recomputed += t.recomputed;
  EXPECT_EQ(offloaded, o.offloaded);
  EXPECT_EQ(recomputed, o.recomputed);
  EXPECT_GT(o.offloaded + o.recomputed, 0);
  EXPECT_LE(o.bound_us, o.objective_us + 1e-6);
  EXPECT_THROW(solve_optimal(net, 64, {.memory = {.mode = OffloadMode::hybrid}}, gpu.queries, gpu.model, 60),
               std::invalid_argument);
}

TEST(Optimal, PlanPrintsHybridsDistanceFromTheOptimum) {
  const testing::CommandResult r = testing::run_here(
      "plan --model resnet20 --dataset cifar10 --batch-size 64 --profile v100 --budget 48MiB --mode hybrid "
      "--heuristic best-fit --algo p --order prefetch-first --optimal --time-limit 60",
      testing::Captured::stdout_only);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("optimal (CBC, "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("against the optimum's prediction"), std::string::npos) << r.output;
  const testing::CommandResult refused =
      testing::run_here("plan --model resnet20 --dataset cifar10 --profile v100 --optimal", testing::Captured::stderr_only);
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.output.find("give --budget"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace tidepool
