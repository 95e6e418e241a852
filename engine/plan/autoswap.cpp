#include "engine/plan/autoswap.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "engine/memory/allocator.h"

namespace tidepool {

namespace {

bool is_compute(StepKind k) {
  return k == StepKind::forward || k == StepKind::backward || k == StepKind::accumulate || k == StepKind::update ||
         k == StepKind::recompute;
}

// Sums over compute steps by prefix: before[i] is the sum over the compute
// steps in [0, i), so a candidate's absence (out_step, in_step) is
// before[in_step] - before[out_step + 1]. Loads are whole bytes, so the
// sums are exact in a double.
std::vector<double> compute_step_prefix(const Schedule& s, const std::vector<double>& value) {
  std::vector<double> before(s.steps.size() + 1, 0.0);
  for (std::size_t i = 0; i < s.steps.size(); ++i)
    before[i + 1] = before[i] + (is_compute(s.steps[i].kind) ? value[i] : 0.0);
  return before;
}

double over_absence(const std::vector<double>& before, const SwapCandidate& c) {
  return before[static_cast<std::size_t>(c.in_step)] - before[static_cast<std::size_t>(c.out_step + 1)];
}

}  // namespace

SwapWeights normalised(const SwapWeights& weights) {
  const double w[] = {weights.aoa, weights.doa, weights.wdoa, weights.swdoa};
  const char* names[] = {"aoa", "doa", "wdoa", "swdoa"};
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    if (!std::isfinite(w[i]) || w[i] < 0) {
      std::ostringstream msg;
      msg << "swap weight " << names[i] << " must be a finite number of at least 0, not " << w[i];
      throw std::invalid_argument(msg.str());
    }
    sum += w[i];
  }
  if (sum == 0) return SwapWeights{};
  return {w[0] / sum, w[1] / sum, w[2] / sum, w[3] / sum};
}

std::vector<SwapCandidate> autoswap_order(const Schedule& base, const Schedule& all, SwapScore score,
                                          const SwapWeights& weights) {
  const std::vector<std::size_t> load = base.load_after_steps();
  if (load.empty()) return {};
  const int peak_step = static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
  const std::size_t small = std::min<std::size_t>(std::size_t{1} << 20, base.peak_load_bytes / 256);

  // Each tensor's last forward access and first backward access.
  std::vector<int> out(base.tensors.size(), -1), in(base.tensors.size(), -1);
  for (int i = 0; i < static_cast<int>(base.steps.size()); ++i) {
    const Step& st = base.steps[static_cast<std::size_t>(i)];
    if (st.kind != StepKind::forward && st.kind != StepKind::backward) continue;
    const NodeTensors& nt = base.nodes[static_cast<std::size_t>(st.node)];
    auto touch = [&](int t) {
      if (st.kind == StepKind::forward)
        out[t] = i;
      else if (in[t] < 0)
        in[t] = i;
    };
    for (int t : nt.inputs) touch(t);
    touch(nt.output);
  }

  std::vector<SwapCandidate> candidates;
  for (int t = 0; t < static_cast<int>(all.tensors.size()) && t < static_cast<int>(base.tensors.size()); ++t) {
    if (!all.tensors[t].offloaded || out[t] < 0 || in[t] < 0) continue;
    const std::size_t bytes = round_up(base.tensors[t].info.bytes());
    if (bytes < small || !(out[t] < peak_step && peak_step < in[t])) continue;
    candidates.push_back({t, bytes, out[t], in[t], 0});
  }

  // Scores on a load curve (per step): the fixed ones once, SWDOA after
  // every choice on what the choices so far leave (`area`; `unswapped`
  // keeps WDOA's curve).
  std::vector<double> curve(load.begin(), load.end());
  const std::vector<double> steps = compute_step_prefix(base, std::vector<double>(load.size(), 1.0));
  const std::vector<double> unswapped = compute_step_prefix(base, curve);
  std::vector<double> area = unswapped;
  // BO's mix: each score over its largest on the load without swapping, so
  // that a weight means the same whatever the units (AOA is DOA times at
  // least a MiB). SWDOA shares WDOA's divisor: the same area, on a lower load.
  const SwapWeights w = score == SwapScore::bo ? normalised(weights) : SwapWeights{};
  double most_doa = 0, most_aoa = 0, most_wdoa = 0;
  for (const SwapCandidate& c : candidates) {
    most_doa = std::max(most_doa, over_absence(steps, c));
    most_aoa = std::max(most_aoa, over_absence(steps, c) * static_cast<double>(c.bytes));
    most_wdoa = std::max(most_wdoa, over_absence(unswapped, c));
  }
  auto over = [](double value, double most) { return most > 0 ? value / most : 0.0; };
  auto score_of = [&](const SwapCandidate& c) {
    const double doa = over_absence(steps, c);
    switch (score) {
      case SwapScore::doa: return doa;
      case SwapScore::aoa: return doa * static_cast<double>(c.bytes);
      case SwapScore::wdoa: return over_absence(unswapped, c);
      case SwapScore::swdoa: return over_absence(area, c);
      case SwapScore::bo:
        return w.aoa * over(doa * static_cast<double>(c.bytes), most_aoa) + w.doa * over(doa, most_doa) +
               w.wdoa * over(over_absence(unswapped, c), most_wdoa) + w.swdoa * over(over_absence(area, c), most_wdoa);
    }
    return 0.0;
  };
  // Ties go to the earlier tensor, so the order is the same every time.
  auto better = [](const SwapCandidate& a, const SwapCandidate& b) {
    return a.score != b.score ? a.score > b.score : a.tensor < b.tensor;
  };
  const bool submodular = score == SwapScore::swdoa || (score == SwapScore::bo && w.swdoa > 0);
  if (!submodular) {
    for (SwapCandidate& c : candidates) c.score = score_of(c);
    std::sort(candidates.begin(), candidates.end(), better);
    return candidates;
  }
  std::vector<SwapCandidate> order;
  while (!candidates.empty()) {
    for (SwapCandidate& c : candidates) c.score = score_of(c);
    auto best = std::min_element(candidates.begin(), candidates.end(), better);
    for (int i = best->out_step + 1; i < best->in_step; ++i) curve[static_cast<std::size_t>(i)] -= static_cast<double>(best->bytes);
    area = compute_step_prefix(base, curve);
    order.push_back(*best);
    candidates.erase(best);
  }
  return order;
}

std::vector<std::size_t> autoswap_choose(const Schedule& base, const std::vector<SwapCandidate>& order,
                                         std::size_t limit) {
  std::vector<std::size_t> load = base.load_after_steps();
  // Absent from the step after its last forward access to the step before
  // its first backward access, whatever kind of step.
  auto absent = [&](const SwapCandidate& c, bool out) {
    for (int i = c.out_step + 1; i < c.in_step; ++i) {
      if (out)
        load[static_cast<std::size_t>(i)] -= c.bytes;
      else
        load[static_cast<std::size_t>(i)] += c.bytes;
    }
  };
  auto peak = [&] { return load.empty() ? std::size_t{0} : *std::max_element(load.begin(), load.end()); };
  std::vector<std::size_t> chosen;
  for (std::size_t n = 0; n < order.size() && peak() > limit; ++n) {
    absent(order[n], true);
    chosen.push_back(n);
  }
  if (peak() > limit) return chosen;
  for (std::size_t k = chosen.size(); k-- > 0;) {
    absent(order[chosen[k]], false);
    if (peak() <= limit)
      chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
    else
      absent(order[chosen[k]], true);
  }
  return chosen;
}

}  // namespace tidepool
