#include "engine/plan/hybrid.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "engine/memory/pool_search.h"
#include "engine/memory/replay.h"
#include "engine/perf/step_work.h"
#include "engine/plan/planner.h"
#include "engine/schedule/alloc_granularity.h"

namespace tidepool {
namespace {

struct Candidate {
  int tensor = -1;
  bool recompute = false;  // else offload
  double cost_us = 0;   // of the way it takes
  double other_us = 0;  // of the other way (infinity: closed)
  std::size_t bytes = 0;
};

PlanSettings with_mode(PlanSettings s, OffloadMode mode) {
  s.memory.mode = mode;
  s.swapped.clear();
  s.recomputed.clear();
  return s;
}

// Each tensor's cheaper way off the device, ranked by cost per byte.
std::vector<Candidate> ranked_candidates(const Network& net, std::int64_t batch, const PlanSettings& train,
                                         const KernelQueries& kernels, const PerfModel& model, const Schedule& all) {
  // Every layer output the planner can recompute (with chains: an input
  // recomputed first is recomputed once, for its own backward reader too).
  PlanSettings every = with_mode(train, OffloadMode::hybrid);
  for (const NodeTensors& nt : all.nodes) every.recomputed.push_back(nt.output);
  const Schedule rebuilt = plan_schedule(net, batch, every, kernels);
  // The offloads AccUDNN's model hides under compute, with no budget.
  const AccudnnOffloads hidden = choose_accudnn_offloads(net, all, model, kernels, 0);
  const bool pageable = train.memory.host_memory == HostMemory::pageable;

  // A layer's forward time, from its forward step in the schedule.
  std::vector<double> forward_us(net.nodes().size(), 0);
  WorkCounter counter(kernels);
  for (int i = 0; i < static_cast<int>(rebuilt.steps.size()); ++i) {
    const Step& st = rebuilt.steps[static_cast<std::size_t>(i)];
    if (st.kind == StepKind::forward) forward_us[static_cast<std::size_t>(st.node)] = model.compute_us(step_work(net, rebuilt, i, counter));
  }

  std::vector<Candidate> out;
  for (std::size_t t = 0; t < all.tensors.size(); ++t) {
    const bool can_offload = all.tensors[t].offloaded;
    const bool can_recompute = t < rebuilt.tensors.size() && rebuilt.tensors[t].recomputed;
    if (!can_offload && !can_recompute) continue;
    const std::size_t bytes = round_up(all.tensors[t].info.bytes());
    const int id = static_cast<int>(t);
    double offload_us = std::numeric_limits<double>::infinity();
    if (can_offload)
      offload_us = std::binary_search(hidden.offloaded.begin(), hidden.offloaded.end(), id)
                       ? 0.0
                       : model.copy_us(all.tensors[t].info.bytes(), false, pageable);
    const double recompute_us =
        can_recompute ? forward_us[static_cast<std::size_t>(all.tensors[t].node)] : std::numeric_limits<double>::infinity();
    // A free offload over a recompute; otherwise the cheaper, a recompute
    // on a tie (it needs no link and no host memory).
    const bool recompute = !(offload_us == 0.0) && recompute_us <= offload_us;
    out.push_back({id, recompute, recompute ? recompute_us : offload_us, recompute ? offload_us : recompute_us, bytes});
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    const double ca = a.cost_us / static_cast<double>(a.bytes), cb = b.cost_us / static_cast<double>(b.bytes);
    if (ca != cb) return ca < cb;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.tensor < b.tensor;
  });
  return out;
}

// The ranking resolved in order into actions that hold together: a
// recompute runs one layer (and any layer before it whose output nobody
// reads in backward) from tensors that stay on the device, so those
// tensors are then pinned, neither offloaded nor recomputed later; a
// candidate whose way is closed takes its other way if that is open, or
// stays. Any prefix of the result is as consistent as the whole.
std::vector<Candidate> resolve(const Network& net, const Schedule& all, const std::vector<Candidate>& ranked) {
  const std::size_t n = all.tensors.size();
  std::vector<bool> kept_for_backward(n, false);
  for (std::size_t i = 0; i < all.nodes.size(); ++i) {
    const NodeTensors& nt = all.nodes[i];
    if (!nt.runs_backward) continue;
    const Layer& layer = *net.nodes()[i].layer;
    for (std::size_t j = 0; j < nt.inputs.size(); ++j)
      if (layer.backward_reads_input(static_cast<int>(j))) kept_for_backward[static_cast<std::size_t>(nt.inputs[j])] = true;
    if (layer.backward_reads_output()) kept_for_backward[static_cast<std::size_t>(nt.output)] = true;
  }
  enum class State : std::uint8_t { keep, offload, recompute };
  std::vector<State> state(n, State::keep);
  std::vector<bool> pinned(n, false);
  auto can_run_again = [&](int node) {
    return node >= 0 && node != net.loss_node() && !all.nodes[static_cast<std::size_t>(node)].forward_rank_sums;
  };
  // Whether layer-output `t` can be computed from staying tensors, through
  // layers whose outputs backward does not read; collects those tensors.
  std::function<bool(int, std::vector<int>&)> rebuildable = [&](int t, std::vector<int>& reads) {
    const int p = all.tensors[static_cast<std::size_t>(t)].node;
    if (!can_run_again(p) || all.nodes[static_cast<std::size_t>(p)].output != t) return false;
    for (int x : all.nodes[static_cast<std::size_t>(p)].inputs) {
      const auto ux = static_cast<std::size_t>(x);
      if (kept_for_backward[ux]) {
        if (state[ux] != State::keep) return false;
        reads.push_back(x);
      } else if (!rebuildable(x, reads)) {
        return false;
      }
    }
    return true;
  };
  std::vector<Candidate> out;
  for (Candidate c : ranked) {
    const auto t = static_cast<std::size_t>(c.tensor);
    if (pinned[t]) continue;
    std::vector<int> reads;
    if (c.recompute && !(kept_for_backward[t] && rebuildable(c.tensor, reads))) {
      if (c.other_us == std::numeric_limits<double>::infinity()) continue;  // no offload either: it stays
      std::swap(c.cost_us, c.other_us);
      c.recompute = false;
    }
    if (c.recompute)
      for (int x : reads) pinned[static_cast<std::size_t>(x)] = true;
    state[t] = c.recompute ? State::recompute : State::offload;
    out.push_back(c);
  }
  return out;
}

Schedule plan_prefix(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                     const std::vector<Candidate>& ranked, std::size_t k) {
  PlanSettings chosen = with_mode(train, OffloadMode::hybrid);
  for (std::size_t i = 0; i < k; ++i) (ranked[i].recompute ? chosen.recomputed : chosen.swapped).push_back(ranked[i].tensor);
  std::sort(chosen.swapped.begin(), chosen.swapped.end());
  std::sort(chosen.recomputed.begin(), chosen.recomputed.end());
  return plan_schedule(net, batch, chosen, kernels);
}

}  // namespace

Schedule as_hybrid(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                   const Schedule& s) {
  PlanSettings chosen = with_mode(train, OffloadMode::hybrid);
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    if (s.tensors[t].offloaded) chosen.swapped.push_back(static_cast<int>(t));
    if (s.tensors[t].recomputed) chosen.recomputed.push_back(static_cast<int>(t));
  }
  return plan_schedule(net, batch, chosen, kernels);
}

HybridChoice choose_hybrid(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                           const PerfModel& model, const std::vector<Schedule>& alternatives) {
  const std::size_t budget = train.memory.budget_bytes;
  const std::string& heuristic = train.memory.heuristic;
  auto fits = [&](const Schedule& s) { return !budget || replay_schedule(s, heuristic, budget, 0).fits(); };
  auto needed = [&](const Schedule& s) { return search_pool_size(s, heuristic, 0).pool_bytes; };

  HybridChoice best;
  const Schedule keep = plan_schedule(net, batch, with_mode(train, OffloadMode::hybrid), kernels);
  best.least_pool_bytes = needed(keep);
  if (fits(keep)) {
    best.train = keep;
    best.predicted = predict(net, keep, model, kernels);
    best.from = "keep";
    return best;
  }

  std::optional<HybridChoice> chosen;
  auto weigh = [&](Schedule s, std::string from) {
    best.least_pool_bytes = std::min(best.least_pool_bytes, needed(s));
    if (!fits(s)) return;
    const Prediction p = predict(net, s, model, kernels);
    if (!chosen || p.iteration_us < chosen->predicted.iteration_us) chosen = HybridChoice{std::move(s), p, std::move(from), 0};
  };

  // The mix: the shortest fitting prefix of the ranking.
  const Schedule all = plan_schedule(net, batch, with_mode(train, OffloadMode::all), kernels);
  const std::vector<Candidate> ranked = resolve(net, all, ranked_candidates(net, batch, train, kernels, model, all));
  Schedule whole = plan_prefix(net, batch, train, kernels, ranked, ranked.size());
  if (fits(whole)) {
    std::size_t no = 0, yes = ranked.size();
    while (yes - no > 1) {
      const std::size_t mid = no + (yes - no) / 2;
      (fits(plan_prefix(net, batch, train, kernels, ranked, mid)) ? yes : no) = mid;
    }
    weigh(yes == ranked.size() ? std::move(whole) : plan_prefix(net, batch, train, kernels, ranked, yes), "mix");
  } else {
    best.least_pool_bytes = std::min(best.least_pool_bytes, needed(whole));
  }
  for (const Schedule& s : alternatives)
    weigh(as_hybrid(net, batch, train, kernels, s), to_string(s.settings.memory.mode));

  if (!chosen) {  // nothing fits: the least pool is what a refusal names
    best.train = std::move(whole);
    best.predicted = predict(net, best.train, model, kernels);
    best.from = "none fits";
    return best;
  }
  chosen->least_pool_bytes = best.least_pool_bytes;
  return std::move(*chosen);
}

}  // namespace tidepool
