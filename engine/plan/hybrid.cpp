#include "engine/plan/hybrid.h"

#include <algorithm>
#include <cstdint>
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

constexpr double kClosed = std::numeric_limits<double>::infinity();

// One tensor taken off the device, and how.
struct Pick {
  int tensor = -1;
  bool recompute = false;
};

struct Candidate {
  int tensor = -1;
  bool recompute = false;  // else offload
  double cost_us = 0;   // of the way it takes
  double other_us = 0;  // of the other way (infinity: closed)
  std::size_t bytes = 0;
  const std::vector<int>* reads = nullptr;  // WayOff::reads
};

PlanSettings with_mode(PlanSettings s, OffloadMode mode) {
  s.memory.mode = mode;
  s.swapped.clear();
  s.recomputed.clear();
  return s;
}

// The mix for a limit on the load: while the load the picks leave peaks
// above it, the cheapest way per byte to take a tensor off the device at
// that peak (one whose time away covers the peak's step: the costs of
// ways_off, the times of optimal.h); a recompute's reads are then pinned,
// neither offloaded nor recomputed. Stops when nothing more helps at the
// peak.
std::vector<Pick> peak_greedy(const WaysOff& ways, std::size_t limit) {
  std::vector<double> load(ways.load.begin(), ways.load.end());
  const std::vector<WayOff>& w = ways.tensors;
  std::vector<bool> taken(w.size(), false), moved(ways.keep.tensors.size(), false),
      pinned(ways.keep.tensors.size(), false);
  std::vector<Pick> out;
  for (;;) {
    const auto peak = std::max_element(load.begin(), load.end());
    if (peak == load.end() || *peak <= static_cast<double>(limit)) break;
    const int k = static_cast<int>(peak - load.begin());
    int best = -1;
    bool best_recompute = false;
    double best_cost = kClosed;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const auto t = static_cast<std::size_t>(w[i].tensor);
      if (taken[i] || pinned[t]) continue;
      const double bytes = static_cast<double>(w[i].bytes);
      auto consider = [&](double cost, bool recompute) {
        const double per_byte = cost / bytes;
        if (per_byte < best_cost || (per_byte == best_cost && best >= 0 && w[i].bytes > w[static_cast<std::size_t>(best)].bytes)) {
          best = static_cast<int>(i);
          best_recompute = recompute;
          best_cost = per_byte;
        }
      };
      if (w[i].offload_us < kClosed && w[i].away_offloaded(k)) consider(w[i].offload_us, false);
      const bool reads_stay =
          std::none_of(w[i].reads.begin(), w[i].reads.end(), [&](int x) { return moved[static_cast<std::size_t>(x)]; });
      if (w[i].recompute_us < kClosed && w[i].away_recomputed(k) && reads_stay) consider(w[i].recompute_us, true);
    }
    if (best < 0) break;  // nothing away at this peak can go: the limit is out of reach
    const WayOff& b = w[static_cast<std::size_t>(best)];
    taken[static_cast<std::size_t>(best)] = true;
    moved[static_cast<std::size_t>(b.tensor)] = true;
    if (best_recompute)
      for (int x : b.reads) pinned[static_cast<std::size_t>(x)] = true;
    for (std::size_t s = 0; s < load.size(); ++s)
      if (best_recompute ? b.away_recomputed(static_cast<int>(s)) : b.away_offloaded(static_cast<int>(s)))
        load[s] -= static_cast<double>(b.bytes);
    out.push_back({b.tensor, best_recompute});
  }
  return out;
}

// A load curve with range add and the maximum over all of it, so that
// whether a change keeps the whole curve under a limit costs a logarithm,
// not a walk over the steps it touches.
class LoadTree {
 public:
  explicit LoadTree(const std::vector<double>& load) : n_(load.size()), max_(4 * n_ + 4, 0), add_(4 * n_ + 4, 0) {
    if (n_) build(1, 0, n_ - 1, load);
  }
  // Adds `v` to the load at steps [from, to] (nothing when from > to).
  void add(int from, int to, double v) {
    if (n_ && from <= to) add(1, 0, n_ - 1, clamp(from), clamp(to), v);
  }
  double max() const { return n_ ? max_[1] : 0; }

 private:
  std::size_t clamp(int k) const { return static_cast<std::size_t>(std::clamp(k, 0, static_cast<int>(n_) - 1)); }
  void build(std::size_t node, std::size_t lo, std::size_t hi, const std::vector<double>& load) {
    if (lo == hi) {
      max_[node] = load[lo];
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    build(2 * node, lo, mid, load);
    build(2 * node + 1, mid + 1, hi, load);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }
  void add(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, std::size_t to, double v) {
    if (to < lo || hi < from) return;
    if (from <= lo && hi <= to) {
      max_[node] += v;
      add_[node] += v;
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    add(2 * node, lo, mid, from, to, v);
    add(2 * node + 1, mid + 1, hi, from, to, v);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  std::size_t n_;
  std::vector<double> max_, add_;  // per node: the most in its range, and what was added to all of it
};

enum class Way : std::uint8_t { keep, offload, recompute };

// The mix for a limit on the load, from the tight side: every activation
// that can be offloaded starts offloaded (the least load offloading alone
// reaches), and one that can only be recomputed starts recomputed where
// what it reads can stay; then, while some change lowers the predicted
// cost and keeps the load under the limit at every step, the one that
// gains the most per byte of room it takes is made:
//   - an offload kept (room: its bytes while it was away);
//   - an offload turned into a recompute, which is away for longer (until
//     its reader rather than the prefetch before it), what the recompute
//     reads kept with it (room: theirs);
//   - a recompute kept, or offloaded where that is cheaper.
// Where the limit is tight this finds mixes peak_greedy cannot: that one
// starts from keeping everything and pins what each recompute reads, so
// that at the last peaks nothing is left to take off. Nothing when even
// the start is above the limit.
std::optional<std::vector<Pick>> descend(const WaysOff& ways, std::size_t limit) {
  const std::vector<WayOff>& w = ways.tensors;
  const std::size_t n = w.size();
  std::vector<int> candidate(ways.keep.tensors.size(), -1);
  for (std::size_t i = 0; i < n; ++i) candidate[static_cast<std::size_t>(w[i].tensor)] = static_cast<int>(i);
  LoadTree load(std::vector<double>(ways.load.begin(), ways.load.end()));
  std::vector<Way> way(n, Way::keep);
  auto cost = [&](std::size_t i, Way x) {
    return x == Way::offload ? w[i].offload_us : x == Way::recompute ? w[i].recompute_us : 0.0;
  };
  // The steps a way keeps tensor i away: (last forward use, end).
  auto away_end = [&](std::size_t i, Way x) {
    return x == Way::offload ? w[i].prefetch_step : x == Way::recompute ? w[i].first_backward_step : w[i].last_forward_step + 1;
  };
  auto change = [&](std::size_t i, Way to) {
    const double bytes = static_cast<double>(w[i].bytes);
    const int from_end = away_end(i, way[i]), to_end = away_end(i, to);
    // Away at steps last_forward_step < k < end.
    if (to_end > from_end) load.add(from_end, to_end - 1, -bytes);
    if (from_end > to_end) load.add(to_end, from_end - 1, bytes);
    way[i] = to;
  };
  const double cap = static_cast<double>(limit);
  for (std::size_t i = 0; i < n; ++i)
    if (w[i].offload_us < kClosed) change(i, Way::offload);
  // What a recompute reads stays: kept now, and never moved (a kept tensor
  // has no moves below).
  std::vector<bool> pinned(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (way[i] != Way::keep || pinned[i] || !(w[i].recompute_us < kClosed)) continue;
    const bool reads_stay = std::all_of(w[i].reads.begin(), w[i].reads.end(), [&](int x) {
      const int c = candidate[static_cast<std::size_t>(x)];
      return c < 0 || way[static_cast<std::size_t>(c)] == Way::keep;
    });
    if (!reads_stay) continue;
    change(i, Way::recompute);
    for (int x : w[i].reads)
      if (const int c = candidate[static_cast<std::size_t>(x)]; c >= 0) pinned[static_cast<std::size_t>(c)] = true;
  }
  if (load.max() > cap) return std::nullopt;

  struct Move {
    std::vector<std::pair<std::size_t, Way>> changes;
    double gain = 0;
    double room = 0;  // bytes it adds where they were away
  };
  // Applies a move, or says why not: it does not fit (and is undone).
  auto try_move = [&](const Move& m) {
    std::vector<Way> before;
    for (const auto& [i, to] : m.changes) {
      before.push_back(way[i]);
      change(i, to);
    }
    if (load.max() <= cap) return true;
    for (std::size_t c = m.changes.size(); c-- > 0;) change(m.changes[c].first, before[c]);
    return false;
  };
  for (;;) {
    std::vector<Move> moves;
    for (std::size_t i = 0; i < n; ++i) {
      const double bytes = static_cast<double>(w[i].bytes);
      auto move = [&](std::vector<std::pair<std::size_t, Way>> changes, double room) {
        double gain = 0;
        for (const auto& [j, to] : changes) gain += cost(j, way[j]) - cost(j, to);
        if (gain > 0) moves.push_back({std::move(changes), gain, room});
      };
      if (way[i] == Way::offload) {
        move({{i, Way::keep}}, bytes);
        if (w[i].recompute_us < kClosed) {
          std::vector<std::pair<std::size_t, Way>> changes{{i, Way::recompute}};
          double room = 0;
          bool reads_can_stay = true;
          for (int x : w[i].reads) {
            const int c = candidate[static_cast<std::size_t>(x)];
            if (c < 0 || way[static_cast<std::size_t>(c)] == Way::keep) continue;
            if (way[static_cast<std::size_t>(c)] == Way::recompute) reads_can_stay = false;
            changes.push_back({static_cast<std::size_t>(c), Way::keep});
            room += static_cast<double>(w[static_cast<std::size_t>(c)].bytes);
          }
          if (reads_can_stay) move(std::move(changes), room);
        }
      } else if (way[i] == Way::recompute) {
        move({{i, Way::keep}}, bytes);
        if (w[i].offload_us < kClosed) move({{i, Way::offload}}, bytes);
      }
    }
    // The most gain per byte of room first (no room: first of all), then
    // the larger gain; stable, so ties go to the earlier tensor.
    auto per_byte = [](const Move& m) { return m.room > 0 ? m.gain / m.room : kClosed; };
    std::stable_sort(moves.begin(), moves.end(), [&](const Move& a, const Move& b) {
      const double pa = per_byte(a), pb = per_byte(b);
      return pa != pb ? pa > pb : a.gain > b.gain;
    });
    const auto made = std::find_if(moves.begin(), moves.end(), try_move);
    if (made == moves.end()) break;
  }
  std::vector<Pick> out;
  for (std::size_t i = 0; i < n; ++i)
    if (way[i] != Way::keep) out.push_back({w[i].tensor, way[i] == Way::recompute});
  return out;
}

Schedule plan_picks(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                    const std::vector<Pick>& picks) {
  std::vector<int> offloaded, recomputed;
  for (const Pick& p : picks) (p.recompute ? recomputed : offloaded).push_back(p.tensor);
  return plan_hybrid(net, batch, train, kernels, std::move(offloaded), std::move(recomputed));
}

// Each tensor's cheaper way off the device, ranked by cost per byte.
std::vector<Candidate> ranked(const WaysOff& ways) {
  std::vector<Candidate> out;
  for (const WayOff& w : ways.tensors) {
    // A free offload over a recompute; otherwise the cheaper, a recompute
    // on a tie (it needs no link and no host memory).
    const bool recompute = !(w.offload_us == 0.0) && w.recompute_us <= w.offload_us;
    out.push_back({w.tensor, recompute, recompute ? w.recompute_us : w.offload_us,
                   recompute ? w.offload_us : w.recompute_us, w.bytes, &w.reads});
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
// recompute needs what it reads to stay, so those are then pinned,
// neither offloaded nor recomputed later; a candidate whose way is closed
// takes its other way if that is open, or stays. Any prefix of the result
// is as consistent as the whole.
std::vector<Candidate> resolve(const std::vector<Candidate>& order, std::size_t tensors) {
  std::vector<bool> moved(tensors, false), pinned(tensors, false);
  std::vector<Candidate> out;
  for (Candidate c : order) {
    const auto t = static_cast<std::size_t>(c.tensor);
    if (pinned[t]) continue;
    const bool reads_stay = std::none_of(c.reads->begin(), c.reads->end(),
                                         [&](int x) { return moved[static_cast<std::size_t>(x)]; });
    if (c.recompute && !reads_stay) {
      if (c.other_us == kClosed) continue;  // no offload either: it stays
      std::swap(c.cost_us, c.other_us);
      c.recompute = false;
    }
    if (c.recompute)
      for (int x : *c.reads) pinned[static_cast<std::size_t>(x)] = true;
    moved[t] = true;
    out.push_back(c);
  }
  return out;
}

Schedule plan_prefix(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                     const std::vector<Candidate>& ranked, std::size_t k) {
  std::vector<int> offloaded, recomputed;
  for (std::size_t i = 0; i < k; ++i) (ranked[i].recompute ? recomputed : offloaded).push_back(ranked[i].tensor);
  return plan_hybrid(net, batch, train, kernels, std::move(offloaded), std::move(recomputed));
}

}  // namespace

WaysOff ways_off(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                 const PerfModel& model) {
  WaysOff out;
  out.keep = plan_schedule(net, batch, with_mode(train, OffloadMode::hybrid), kernels);
  const Schedule& keep = out.keep;
  out.load = keep.load_after_steps();
  const Schedule all = plan_schedule(net, batch, with_mode(train, OffloadMode::all), kernels);
  const std::size_t n = keep.tensors.size();
  // What backward reads, and the first and last layers (in backward's
  // order: the largest and the smallest index) that read it.
  std::vector<bool> kept_for_backward(n, false);
  std::vector<int> first_reader(n, -1), last_reader(n, -1);
  for (std::size_t i = 0; i < keep.nodes.size(); ++i) {
    const NodeTensors& nt = keep.nodes[i];
    if (!nt.runs_backward) continue;
    const Layer& layer = *net.nodes()[i].layer;
    auto reads = [&](int t) {
      const auto u = static_cast<std::size_t>(t);
      kept_for_backward[u] = true;
      first_reader[u] = static_cast<int>(i);
      if (last_reader[u] < 0) last_reader[u] = static_cast<int>(i);
    };
    for (std::size_t j = 0; j < nt.inputs.size(); ++j)
      if (layer.backward_reads_input(static_cast<int>(j))) reads(nt.inputs[j]);
    if (layer.backward_reads_output()) reads(nt.output);
  }
  const int loss = net.loss_node();
  auto can_run_again = [&](int node) {
    return node >= 0 && node != loss && !keep.nodes[static_cast<std::size_t>(node)].forward_rank_sums;
  };
  // Whether layer-output `t` can be computed again, when layer `at`'s
  // backward first reads it, from what backward reads and is still on the
  // device then, through layers whose outputs backward does not read;
  // collects what it reads and adds up the layers it runs.
  std::vector<double> forward_us(net.nodes().size(), 0);
  std::function<bool(int, int, std::vector<int>&, double&)> rebuildable = [&](int t, int at, std::vector<int>& reads,
                                                                              double& us) {
    const int p = keep.tensors[static_cast<std::size_t>(t)].node;
    if (!can_run_again(p) || keep.nodes[static_cast<std::size_t>(p)].output != t) return false;
    us += forward_us[static_cast<std::size_t>(p)];
    for (int x : keep.nodes[static_cast<std::size_t>(p)].inputs) {
      const auto ux = static_cast<std::size_t>(x);
      if (kept_for_backward[ux]) {
        if (last_reader[ux] > at) return false;  // freed by then
        if (std::find(reads.begin(), reads.end(), x) == reads.end()) reads.push_back(x);
      } else if (!rebuildable(x, at, reads, us)) {
        return false;
      }
    }
    return true;
  };
  // Where each tensor is used in the schedule that keeps everything, and
  // each layer's forward time.
  std::vector<int> last_forward(n, -1), first_backward(n, -1), backward_before(n, -1);
  WorkCounter counter(kernels);
  int previous_backward = -1;
  for (int i = 0; i < static_cast<int>(keep.steps.size()); ++i) {
    const Step& st = keep.steps[static_cast<std::size_t>(i)];
    if (st.kind != StepKind::forward && st.kind != StepKind::backward) continue;
    const NodeTensors& nt = keep.nodes[static_cast<std::size_t>(st.node)];
    const Layer& layer = *net.nodes()[static_cast<std::size_t>(st.node)].layer;
    if (st.kind == StepKind::forward) {
      forward_us[static_cast<std::size_t>(st.node)] = model.compute_us(step_work(net, keep, i, counter));
      for (int x : nt.inputs) last_forward[static_cast<std::size_t>(x)] = i;
      last_forward[static_cast<std::size_t>(nt.output)] = std::max(last_forward[static_cast<std::size_t>(nt.output)], i);
      continue;
    }
    auto read = [&](int x) {
      if (first_backward[static_cast<std::size_t>(x)] < 0) {
        first_backward[static_cast<std::size_t>(x)] = i;
        backward_before[static_cast<std::size_t>(x)] = previous_backward < 0 ? i : previous_backward;
      }
    };
    for (std::size_t j = 0; j < nt.inputs.size(); ++j)
      if (layer.backward_reads_input(static_cast<int>(j))) read(nt.inputs[j]);
    if (layer.backward_reads_output()) read(nt.output);
    previous_backward = i;
  }
  // The offloads AccUDNN's model hides under compute, with no budget.
  const AccudnnOffloads hidden = choose_accudnn_offloads(net, all, model, kernels, 0);
  const bool pageable = train.memory.host_memory == HostMemory::pageable;
  for (std::size_t t = 0; t < n; ++t) {
    if (!kept_for_backward[t] || first_backward[t] < 0) continue;
    const int id = static_cast<int>(t);
    WayOff w;
    w.tensor = id;
    w.bytes = round_up(keep.tensors[t].info.bytes());
    w.offload_us = kClosed;
    if (t < all.tensors.size() && all.tensors[t].offloaded)
      w.offload_us = std::binary_search(hidden.offloaded.begin(), hidden.offloaded.end(), id)
                         ? 0.0
                         : model.copy_us(keep.tensors[t].info.bytes(), false, pageable);
    double us = 0;
    w.recompute_us = rebuildable(id, first_reader[t], w.reads, us) ? us : kClosed;
    if (w.offload_us == kClosed && w.recompute_us == kClosed) continue;
    w.last_forward_step = last_forward[t];
    w.first_backward_step = first_backward[t];
    w.prefetch_step = backward_before[t];
    out.tensors.push_back(std::move(w));
  }
  return out;
}

Schedule plan_hybrid(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                     std::vector<int> offloaded, std::vector<int> recomputed) {
  PlanSettings chosen = with_mode(train, OffloadMode::hybrid);
  std::sort(offloaded.begin(), offloaded.end());
  std::sort(recomputed.begin(), recomputed.end());
  chosen.swapped = std::move(offloaded);
  chosen.recomputed = std::move(recomputed);
  return plan_schedule(net, batch, chosen, kernels);
}

Schedule as_hybrid(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                   const Schedule& s) {
  std::vector<int> offloaded, recomputed;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    if (s.tensors[t].offloaded) offloaded.push_back(static_cast<int>(t));
    if (s.tensors[t].recomputed) recomputed.push_back(static_cast<int>(t));
  }
  return plan_hybrid(net, batch, train, kernels, std::move(offloaded), std::move(recomputed));
}

HybridChoice choose_hybrid(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                           const PerfModel& model, const std::vector<Schedule>& alternatives) {
  const std::size_t budget = train.memory.budget_bytes;
  const std::string& heuristic = train.memory.heuristic;
  auto fits = [&](const Schedule& s) { return !budget || replay_schedule(s, heuristic, budget, 0).fits(); };
  auto needed = [&](const Schedule& s) { return search_pool_size(s, heuristic, 0).pool_bytes; };

  // The smallest budget hybrid works in: the least pool of what does not
  // depend on the budget (everything kept, everything ranked taken off,
  // the fixed policies).
  HybridChoice best;
  const WaysOff ways = ways_off(net, batch, train, kernels, model);
  const Schedule& keep = ways.keep;
  const std::vector<Candidate> order = resolve(ranked(ways), keep.tensors.size());
  Schedule whole = plan_prefix(net, batch, train, kernels, order, order.size());
  best.least_pool_bytes = std::min(needed(keep), needed(whole));
  for (const Schedule& s : alternatives) best.least_pool_bytes = std::min(best.least_pool_bytes, needed(s));
  if (fits(keep)) {
    best.train = keep;
    best.predicted = predict(net, keep, model, kernels);
    best.from = "keep";
    return best;
  }

  std::optional<HybridChoice> chosen;
  auto weigh = [&](Schedule s, std::string from) {
    if (!fits(s)) return;
    const Prediction p = predict_in_pool(net, s, model, kernels, heuristic, budget);
    if (!chosen || p.iteration_us < chosen->predicted.iteration_us) chosen = HybridChoice{std::move(s), p, std::move(from), 0};
  };

  // The cheapest-per-byte mix: a fitting prefix of the ranking, found by
  // bisection (fitting is not monotone in the prefix: not always the
  // shortest).
  if (fits(whole)) {
    std::size_t no = 0, yes = order.size();
    while (yes - no > 1) {
      const std::size_t mid = no + (yes - no) / 2;
      (fits(plan_prefix(net, batch, train, kernels, order, mid)) ? yes : no) = mid;
    }
    weigh(yes == order.size() ? std::move(whole) : plan_prefix(net, batch, train, kernels, order, yes), "mix");
  }
  // The load-driven mixes, planned with the budget as their load limit.
  // Where the pool one needs misses the budget (fragmentation, the load
  // curve's approximations), the limit is lowered by what was missing
  // until a plan fits (kLowerings times at most), then raised again by
  // bisection, to within a 256th of the budget, towards the lowest limit
  // that missed: the higher the limit, the less goes off the device. Every
  // plan that fits is weighed. Gives the last plan, fitting or not.
  auto lowered = [&](const std::function<std::optional<std::vector<Pick>>(std::size_t)>& picks, const char* from) {
    constexpr int kLowerings = 8;
    const std::size_t unit = std::max<std::size_t>(kAllocGranularity, budget / 256);
    std::optional<Schedule> last;
    enum class Outcome { fits, misses, out_of_reach };  // out of reach: no picks bring the load that low
    auto plan_at = [&](std::size_t limit) {
      std::optional<std::vector<Pick>> p = picks(limit);
      if (!p) return Outcome::out_of_reach;
      last = plan_picks(net, batch, train, kernels, *p);
      if (!fits(*last)) return Outcome::misses;
      weigh(*last, from);
      return Outcome::fits;
    };
    std::size_t limit = budget, missed = 0;  // missed: the last limit whose plan did not fit
    for (int attempt = 0;; ++attempt) {
      const Outcome o = plan_at(limit);
      if (o == Outcome::fits) break;
      if (o == Outcome::out_of_reach || attempt + 1 == kLowerings) return last;  // a lower limit does no better
      missed = limit;
      const std::size_t need = needed(*last);
      const std::size_t over = std::max(need > budget ? need - budget : 0, unit);
      if (over >= limit) return last;
      limit -= over;
    }
    if (!missed) return last;  // the budget itself fits
    for (std::size_t yes = limit, no = missed; no - yes > unit;) {
      const std::size_t mid = yes + (no - yes) / 2;
      (plan_at(mid) == Outcome::fits ? yes : no) = mid;
    }
    return last;
  };
  Schedule mix = *lowered([&](std::size_t limit) { return peak_greedy(ways, limit); }, "peak mix");
  lowered([&](std::size_t limit) { return descend(ways, limit); }, "tight mix");
  for (const Schedule& s : alternatives)
    weigh(as_hybrid(net, batch, train, kernels, s), to_string(s.settings.memory.mode));

  if (!chosen) {  // nothing fits: the least pool is what a refusal names
    best.train = std::move(mix);
    best.predicted = predict(net, best.train, model, kernels);
    best.from = "none fits";
    return best;
  }
  chosen->least_pool_bytes = best.least_pool_bytes;
  return std::move(*chosen);
}

}  // namespace tidepool
