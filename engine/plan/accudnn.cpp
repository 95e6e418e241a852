#include "engine/plan/accudnn.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <utility>

namespace tidepool {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument("AccUDNN: " + what); }

std::string layer_label(const AccProblem& p, int j) {
  return "layer " + std::to_string(j) + (p.layers[static_cast<std::size_t>(j)].name.empty()
                                              ? std::string()
                                              : " (" + p.layers[static_cast<std::size_t>(j)].name + ")");
}

int freed_after(const AccFeatureMap& m) { return m.freed_after < 0 ? m.needed_by : m.freed_after; }

bool is_time(double t) { return std::isfinite(t) && t >= 0; }

void check(const AccProblem& p, const std::vector<bool>& pinned) {
  if (p.layers.empty()) refuse("the problem has no layers");
  if (!pinned.empty() && pinned.size() != p.maps.size())
    refuse(std::to_string(pinned.size()) + " pin flags for " + std::to_string(p.maps.size()) + " feature maps");
  const int n = static_cast<int>(p.layers.size());
  // A layer's own releases are of what it or the layers before it placed;
  // more would make the memory held negative.
  std::size_t placed = 0, released = 0;
  for (int j = 0; j < n; ++j) {
    const AccLayer& l = p.layers[static_cast<std::size_t>(j)];
    if (!is_time(l.compute_us)) refuse(layer_label(p, j) + ": compute time must be finite and not negative");
    placed += l.alloc_bytes;
    released += l.release_bytes;
    if (released > placed) refuse(layer_label(p, j) + " releases more than it and the layers before it place");
    for (int m : l.waits_for_offloads)
      if (m < 0 || m >= static_cast<int>(p.maps.size()) || p.maps[static_cast<std::size_t>(m)].offload_after >= j)
        refuse(layer_label(p, j) + " waits for map " + std::to_string(m) +
               ", which is no map offloaded by a layer before it");
  }
  for (const AccFeatureMap& m : p.maps) {
    const std::string what = "feature map " + m.name + ": ";
    if (!(0 <= m.produced_by && m.produced_by <= m.offload_after && m.offload_after < m.needed_by &&
          m.needed_by <= freed_after(m) && freed_after(m) < n && m.fetch_after < m.needed_by))
      refuse(what + "needs 0 <= produced_by <= offload_after < needed_by <= freed_after < " + std::to_string(n) +
             " layers and fetch_after < needed_by (here " + std::to_string(m.produced_by) + ", " +
             std::to_string(m.offload_after) + ", " + std::to_string(m.needed_by) + ", " +
             std::to_string(freed_after(m)) + ", " + std::to_string(m.fetch_after) + ")");
    if (!is_time(m.offload_us) || !is_time(m.prefetch_us))
      refuse(what + "transfer times must be finite and not negative");
  }
}

// What choose_pinned needs beyond the timeline: which prefetches each
// layer's t_ready waited on. `fetched` holds the maps in the order the
// swap-in stream fetched them; layer j's t_ready is the end of the run
// fetched[run_begin[j], run_end[j]), fetched back to back since the stream
// last paused (for memory, or for a map's offload to complete).
struct PrefetchRuns {
  std::vector<int> fetched;
  std::vector<std::size_t> run_begin, run_end;
};

AccTimeline simulate(const AccProblem& p, const std::vector<bool>& pinned, PrefetchRuns* runs) {
  check(p, pinned);
  const std::size_t n = p.layers.size();
  auto is_pinned = [&](std::size_t m) { return !pinned.empty() && pinned[m]; };

  // Per layer: the maps it places, fetches back, frees, starts offloading.
  std::vector<std::vector<int>> produces(n), fetches(n), frees(n), offloads(n);
  for (std::size_t m = 0; m < p.maps.size(); ++m) {
    const AccFeatureMap& map = p.maps[m];
    const int i = static_cast<int>(m);
    produces[static_cast<std::size_t>(map.produced_by)].push_back(i);
    frees[static_cast<std::size_t>(freed_after(map))].push_back(i);
    if (is_pinned(m)) continue;
    if (!map.reclaimed) fetches[static_cast<std::size_t>(map.needed_by)].push_back(i);
    offloads[static_cast<std::size_t>(map.offload_after)].push_back(i);
  }
  auto bytes_of = [&](const std::vector<int>& maps) {
    std::size_t b = 0;
    for (int m : maps) b += p.maps[static_cast<std::size_t>(m)].bytes;
    return b;
  };

  AccTimeline tl;
  tl.ready_us.assign(n, kNever);
  tl.start_us.assign(n, kNever);
  tl.finish_us.assign(n, kNever);
  tl.stall_us.assign(n, kNever);
  if (runs) {
    runs->fetched.clear();
    runs->run_begin.assign(n, 0);
    runs->run_end.assign(n, 0);
  }

  // Releases to come, earliest first: (time, bytes).
  using Release = std::pair<double, std::size_t>;
  std::priority_queue<Release, std::vector<Release>, std::greater<>> releases;
  std::size_t held = 0;
  auto release_until = [&](double t) {
    while (!releases.empty() && releases.top().first <= t) {
      held -= releases.top().second;
      releases.pop();
    }
  };
  std::vector<double> offloaded_at(p.maps.size(), kNever);
  double swap_in = 0, swap_out = 0, previous_finish = 0;
  std::size_t run_begin = 0;

  for (std::size_t j = 0; j < n; ++j) {
    const AccLayer& layer = p.layers[j];
    const std::size_t need = layer.alloc_bytes + bytes_of(produces[j]) + bytes_of(fetches[j]);
    // Algorithm 1: place the layer as soon as the swap-in stream gets to
    // it, or else at the first release after which it fits. Every release
    // that can come before it is known: the layers after it finish later.
    release_until(swap_in);
    double at = swap_in;
    while (held + need > p.budget_bytes && !releases.empty()) {
      at = releases.top().first;
      release_until(at);
    }
    if (held + need > p.budget_bytes) {
      tl.fits = false;
      tl.unfit_layer = static_cast<int>(j);
      tl.iteration_us = tl.total_stall_us = kNever;
      return tl;
    }
    held += need;
    tl.peak_bytes = std::max(tl.peak_bytes, held);
    if (runs && at > swap_in) run_begin = runs->fetched.size();
    for (int m : fetches[j]) {
      const AccFeatureMap& map = p.maps[static_cast<std::size_t>(m)];
      const double issued = map.fetch_after >= 0 ? tl.finish_us[static_cast<std::size_t>(map.fetch_after)] : 0.0;
      if (std::max(offloaded_at[static_cast<std::size_t>(m)], issued) > at) {
        at = std::max(offloaded_at[static_cast<std::size_t>(m)], issued);
        if (runs) run_begin = runs->fetched.size();
      }
      at += map.prefetch_us;
      if (runs) runs->fetched.push_back(m);
    }
    if (runs) {
      runs->run_begin[j] = run_begin;
      runs->run_end[j] = runs->fetched.size();
    }
    tl.ready_us[j] = swap_in = at;

    double start = std::max(previous_finish, at);
    for (int m : layer.waits_for_offloads)
      if (!is_pinned(static_cast<std::size_t>(m))) start = std::max(start, offloaded_at[static_cast<std::size_t>(m)]);
    tl.start_us[j] = start;
    tl.stall_us[j] = tl.start_us[j] - previous_finish;
    tl.total_stall_us += tl.stall_us[j];
    tl.finish_us[j] = previous_finish = tl.start_us[j] + layer.compute_us;
    releases.push({previous_finish, layer.release_bytes + bytes_of(frees[j])});
    for (int m : offloads[j]) {
      const AccFeatureMap& map = p.maps[static_cast<std::size_t>(m)];
      swap_out = offloaded_at[static_cast<std::size_t>(m)] = std::max(previous_finish, swap_out) + map.offload_us;
      if (!map.reclaimed) releases.push({swap_out, map.bytes});
    }
  }
  tl.iteration_us = previous_finish;
  return tl;
}

double total_compute_us(const AccProblem& p) {
  double t = 0;
  for (const AccLayer& l : p.layers) t += l.compute_us;
  return t;
}

// The maps whose pinning would bring layer j's t_ready forward, in the
// order choose_pinned tries them (see the header).
std::vector<int> pin_candidates(const AccProblem& p, const PrefetchRuns& runs, std::size_t j) {
  std::vector<int> own, before;
  for (std::size_t i = runs.run_end[j]; i-- > runs.run_begin[j];) {
    const int m = runs.fetched[i];
    (static_cast<std::size_t>(p.maps[static_cast<std::size_t>(m)].needed_by) == j ? own : before).push_back(m);
  }
  std::stable_sort(own.begin(), own.end(), [&](int a, int b) {
    const double ta = p.maps[static_cast<std::size_t>(a)].prefetch_us;
    const double tb = p.maps[static_cast<std::size_t>(b)].prefetch_us;
    return ta != tb ? ta > tb : a < b;
  });
  own.insert(own.end(), before.begin(), before.end());
  return own;
}

void count_bytes(const AccProblem& p, AccChoice& c) {
  c.offloaded_bytes = c.pinned_bytes = 0;
  for (std::size_t m = 0; m < p.maps.size(); ++m) (c.pinned[m] ? c.pinned_bytes : c.offloaded_bytes) += p.maps[m].bytes;
}

// Eq. 9 for q = batch / base_batch; 1 - (1 - a·c)^q written with expm1 and
// log1p so that it stays exact as c → 0, where it tends to q·a·c.
double eq9(double base_lr, double q, double c) { return -std::expm1(q * std::log1p(-base_lr * c)) / c; }

}  // namespace

AccTimeline ready_times(const AccProblem& problem, const std::vector<bool>& pinned) {
  return simulate(problem, pinned, nullptr);
}

AccChoice choose_pinned(const AccProblem& problem, double stall_tolerance) {
  if (!(stall_tolerance >= 0) || !std::isfinite(stall_tolerance))
    refuse("the stall tolerance must be finite and not negative");
  AccChoice c;
  c.pinned.assign(problem.maps.size(), false);
  PrefetchRuns runs;
  c.timeline = simulate(problem, c.pinned, &runs);
  if (!c.timeline.fits) {
    c.unresolved_layer = c.timeline.unfit_layer;
    count_bytes(problem, c);
    return c;
  }
  const double allowed_us = stall_tolerance * total_compute_us(problem);
  while (c.timeline.total_stall_us > allowed_us) {
    std::vector<std::size_t> stalled;
    for (std::size_t j = 0; j < problem.layers.size(); ++j)
      if (c.timeline.stall_us[j] > 0) stalled.push_back(j);
    std::stable_sort(stalled.begin(), stalled.end(),
                     [&](std::size_t a, std::size_t b) { return c.timeline.stall_us[a] > c.timeline.stall_us[b]; });
    // Whether a pin helps is judged on the whole timeline, so a map that
    // did not help one layer is not tried again for the next.
    std::vector<bool> tried(problem.maps.size(), false);
    bool pinned_one = false;
    for (std::size_t j : stalled) {
      for (int m : pin_candidates(problem, runs, j)) {
        if (tried[static_cast<std::size_t>(m)]) continue;
        tried[static_cast<std::size_t>(m)] = true;
        std::vector<bool> trial = c.pinned;
        trial[static_cast<std::size_t>(m)] = true;
        PrefetchRuns trial_runs;
        AccTimeline tl = simulate(problem, trial, &trial_runs);
        if (!tl.fits || !(tl.total_stall_us < c.timeline.total_stall_us)) continue;
        c.pinned = std::move(trial);
        c.timeline = std::move(tl);
        runs = std::move(trial_runs);
        pinned_one = true;
        break;
      }
      if (pinned_one) break;
    }
    if (!pinned_one) {
      c.unresolved_layer = static_cast<int>(stalled.front());
      count_bytes(problem, c);
      return c;
    }
  }
  c.feasible = true;
  count_bytes(problem, c);
  return c;
}

AccBatchSearch efficiency_optimal_batch(const std::function<std::optional<AccProblem>(std::int64_t)>& problem_at,
                                        std::int64_t k_max, const AccBatchSearchOptions& options) {
  if (options.step < 1) refuse("the batch search's step must be at least 1");
  if (options.min_batch < 1) refuse("the smallest batch to search must be at least 1");
  if (k_max < options.min_batch)
    refuse("the largest batch (" + std::to_string(k_max) + ") is below the smallest to search (" +
           std::to_string(options.min_batch) + ")");
  AccBatchSearch search;
  auto stall_free = [&](std::int64_t k) {
    AccBatchRow row{.batch = k, .iteration_us = kNever};
    AccChoice choice;
    if (std::optional<AccProblem> p = problem_at(k)) {
      choice = choose_pinned(*p, options.stall_tolerance);
      row.trainable = choice.timeline.fits;
    }
    if (row.trainable) {
      row.stall_free = choice.feasible;
      row.iteration_us = choice.timeline.iteration_us;
      row.images_per_s = row.iteration_us > 0 ? static_cast<double>(k) * 1e6 / row.iteration_us : 0;
      row.stall_us = choice.timeline.total_stall_us;
      row.offloaded_bytes = choice.offloaded_bytes;
      row.pinned_bytes = choice.pinned_bytes;
    }
    search.table.push_back(row);
    if (row.stall_free && (!search.batch || k > *search.batch)) {
      search.batch = k;
      search.choice = std::move(choice);
    }
    return row.stall_free;
  };

  // Down by `step` to the first batch that works; `above` is the last that did not.
  std::int64_t above = k_max + 1;
  for (std::int64_t k = k_max;; k = std::max(k - options.step, options.min_batch)) {
    if (stall_free(k)) break;
    above = k;
    if (k == options.min_batch) break;
  }
  // Then between it and `above`; with step 1 they are already next to each other.
  if (search.batch) {
    std::int64_t works = *search.batch;
    while (above - works > 1) {
      const std::int64_t mid = works + (above - works) / 2;
      (stall_free(mid) ? works : above) = mid;
    }
  }
  std::sort(search.table.begin(), search.table.end(),
            [](const AccBatchRow& a, const AccBatchRow& b) { return a.batch > b.batch; });
  return search;
}

double adapted_learning_rate(double base_lr, std::int64_t base_batch, std::int64_t batch, double convexity) {
  if (!(base_lr > 0) || !std::isfinite(base_lr)) refuse("eq. 9: the base learning rate must be positive");
  if (base_batch <= 0 || batch <= 0) refuse("eq. 9: batch sizes must be positive");
  if (!(convexity > 0) || !std::isfinite(convexity)) refuse("eq. 9: the convexity c must be positive");
  if (!(base_lr * convexity < 1))
    refuse("eq. 9 needs base learning rate x c < 1 (here " + std::to_string(base_lr) + " x " +
           std::to_string(convexity) + "): 1 - base_lr·c is what one step contracts by");
  return eq9(base_lr, static_cast<double>(batch) / static_cast<double>(base_batch), convexity);
}

double convexity_from(double base_lr, double q, double target_lr) {
  if (!(base_lr > 0) || !std::isfinite(base_lr)) refuse("eq. 9: the base learning rate must be positive");
  if (!(q > 0) || !std::isfinite(q)) refuse("eq. 9: the batch ratio q must be positive");
  if (q == 1) refuse("eq. 9 gives the base learning rate at q = 1 whatever c is: no c to solve for");
  const double linear = q * base_lr;  // c → 0
  const double lowest = std::min(linear, base_lr), highest = std::max(linear, base_lr);
  if (!(lowest < target_lr && target_lr < highest))
    refuse("eq. 9: at q = " + std::to_string(q) + " a learning rate of " + std::to_string(target_lr) +
           " is outside what any c gives, between " + std::to_string(lowest) + " and " + std::to_string(highest));
  // Falling in c for q > 1, rising for q < 1; `lo` stays on the side of c → 0.
  double lo = 0, hi = 1 / base_lr;
  for (int i = 0; i < 200; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid == lo || mid == hi) break;
    const double lr = eq9(base_lr, q, mid);
    ((q > 1 ? lr > target_lr : lr < target_lr) ? lo : hi) = mid;
  }
  return lo + (hi - lo) / 2;
}

}  // namespace tidepool
