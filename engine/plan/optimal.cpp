#include "engine/plan/optimal.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <CbcModel.hpp>
#include <CoinPackedMatrix.hpp>
#include <CoinPackedVector.hpp>
#include <OsiClpSolverInterface.hpp>

#include "engine/memory/pool_search.h"
#include "engine/memory/replay.h"
#include "engine/plan/hybrid.h"
#include "engine/plan/planner.h"

namespace tidepool {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Solution {
  bool feasible = false, proven = false;
  double objective_us = 0, bound_us = 0;
  std::vector<int> offloaded, recomputed;
  int variables = 0, constraints = 0;
};

// One solve: the programme of optimal.h for a load limit of `limit` bytes.
Solution solve(const WaysOff& ways, std::size_t limit, double time_limit_s) {
  const std::vector<WayOff>& w = ways.tensors;
  const int n = static_cast<int>(w.size());
  auto o = [](int i) { return 2 * i; };
  auto r = [](int i) { return 2 * i + 1; };
  std::vector<double> lower(2 * static_cast<std::size_t>(n), 0), upper(2 * static_cast<std::size_t>(n), 1),
      cost(2 * static_cast<std::size_t>(n), 0);
  std::unordered_map<int, int> index;  // tensor id -> its candidate
  for (int i = 0; i < n; ++i) {
    index[w[i].tensor] = i;
    if (w[i].offload_us == kInfinity) upper[o(i)] = 0;
    else cost[o(i)] = w[i].offload_us;
    if (w[i].recompute_us == kInfinity) upper[r(i)] = 0;
    else cost[r(i)] = w[i].recompute_us;
  }
  CoinPackedMatrix rows(false, 0, 0);
  rows.setDimensions(0, 2 * n);
  std::vector<double> row_lower, row_upper;
  auto add = [&](const CoinPackedVector& v, double lo, double hi) {
    rows.appendRow(v);
    row_lower.push_back(lo);
    row_upper.push_back(hi);
  };
  for (int i = 0; i < n; ++i) {  // one way at most
    CoinPackedVector v;
    v.insert(o(i), 1);
    v.insert(r(i), 1);
    add(v, -kInfinity, 1);
    for (int x : w[i].reads)  // what a recompute reads stays
      if (auto it = index.find(x); it != index.end()) {
        CoinPackedVector c;
        c.insert(r(i), 1);
        c.insert(o(it->second), 1);
        c.insert(r(it->second), 1);
        add(c, -kInfinity, 1);
      }
  }
  // Every step above the limit: the tensors away then save the excess.
  const std::vector<std::size_t>& load = ways.load;
  for (int k = 0; k < static_cast<int>(load.size()); ++k) {
    if (load[static_cast<std::size_t>(k)] <= limit) continue;
    CoinPackedVector v;
    for (int i = 0; i < n; ++i) {
      const double bytes = static_cast<double>(w[i].bytes);
      if (w[i].away_offloaded(k) && upper[o(i)] > 0) v.insert(o(i), bytes);
      if (w[i].away_recomputed(k) && upper[r(i)] > 0) v.insert(r(i), bytes);
    }
    add(v, static_cast<double>(load[static_cast<std::size_t>(k)] - limit), kInfinity);
  }

  Solution s;
  s.variables = 2 * n;
  s.constraints = static_cast<int>(row_lower.size());
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(rows, lower.data(), upper.data(), cost.data(), row_lower.data(), row_upper.data());
  for (int c = 0; c < 2 * n; ++c) solver.setInteger(c);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setMaximumSeconds(time_limit_s);
  model.branchAndBound();
  const double* x = model.bestSolution();
  if (!x) return s;
  s.feasible = true;
  s.proven = model.isProvenOptimal();
  s.objective_us = model.getObjValue();
  s.bound_us = model.getBestPossibleObjValue();
  for (int i = 0; i < n; ++i) {
    if (x[o(i)] > 0.5) s.offloaded.push_back(w[i].tensor);
    if (x[r(i)] > 0.5) s.recomputed.push_back(w[i].tensor);
  }
  std::sort(s.offloaded.begin(), s.offloaded.end());
  std::sort(s.recomputed.begin(), s.recomputed.end());
  return s;
}

}  // namespace

OptimalChoice solve_optimal(const Network& net, std::int64_t batch, const PlanSettings& train,
                            const KernelQueries& kernels, const PerfModel& model, double time_limit_s) {
  const std::size_t budget = train.memory.budget_bytes;
  if (!budget) throw std::invalid_argument("the optimal choice is made in a budget: give --budget");
  if (time_limit_s <= 0) throw std::invalid_argument("the solver's time limit must be positive");
  const WaysOff ways = ways_off(net, batch, train, kernels, model);
  OptimalChoice out;
  std::size_t limit = budget;
  constexpr int kSolves = 3;
  for (int attempt = 0; attempt < kSolves; ++attempt) {
    const auto start = std::chrono::steady_clock::now();
    const Solution s = solve(ways, limit, time_limit_s);
    out.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++out.solves;
    out.variables = s.variables;
    out.constraints = s.constraints;
    if (!s.feasible) return out;  // a lowered limit out of reach keeps the choice before it, which missed
    out.feasible = true;
    out.limit_bytes = limit;
    out.proven = s.proven;
    out.objective_us = s.objective_us;
    out.bound_us = s.bound_us;
    out.train = plan_hybrid(net, batch, train, kernels, s.offloaded, s.recomputed);
    out.predicted = predict_in_pool(net, out.train, model, kernels, train.memory.heuristic, budget);
    out.offloaded = static_cast<int>(s.offloaded.size());
    out.recomputed = static_cast<int>(s.recomputed.size());
    out.fits = replay_schedule(out.train, train.memory.heuristic, budget, 0).fits();  // as every plan checks
    if (out.fits) return out;
    const std::size_t needed = search_pool_size(out.train, train.memory.heuristic, 0).pool_bytes;
    if (needed <= budget || needed - budget >= limit) return out;
    limit -= needed - budget;  // what fragmentation and the steps' approximations took
  }
  return out;
}

}  // namespace tidepool
