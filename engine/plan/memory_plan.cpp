#include "engine/plan/memory_plan.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <stdexcept>

#include "engine/core/bytes_text.h"
#include "engine/memory/allocator.h"
#include "engine/memory/pool_search.h"
#include "engine/plan/autoswap.h"
#include "engine/plan/hybrid.h"
#include "engine/plan/memory_facts.h"
#include "engine/plan/planner.h"

namespace tidepool {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// The pool a schedule needs under a heuristic, run after run (vDNN++'s
// search over two iterations).
std::size_t needed_pool(const Schedule& s, const std::string& heuristic, int park_horizon = 0) {
  return search_pool_size(s, heuristic, park_horizon).pool_bytes;
}

// AutoSwap's train schedules, one per load limit: `all`'s tensors ranked
// on the schedule without offloads, chosen by the load model until its
// peak is under the limit, then the next ones in order while the real
// schedule's peak is still above (the model leaves out the workspaces and
// gradients that come and go around an absence's ends).
class AutoSwapSchedules {
 public:
  AutoSwapSchedules(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels)
      : net_(net), batch_(batch), train_(train), kernels_(kernels) {
    PlanSettings without = train, with_all = train;
    without.memory.mode = OffloadMode::base;
    with_all.memory.mode = OffloadMode::all;
    base_ = plan_schedule(net, batch, without, kernels);
    order_ = autoswap_order(base_, plan_schedule(net, batch, with_all, kernels), train.memory.swap_score,
                            train.memory.swap_weights);
  }

  const Schedule& base() const { return base_; }

  // The schedule for a limit (0: no limit, nothing offloaded).
  Schedule at(std::size_t limit) const {
    PlanSettings p = train_;
    p.swapped.clear();
    if (limit == 0 || base_.peak_load_bytes <= limit) return plan_schedule(net_, batch_, p, kernels_);
    std::vector<bool> taken(order_.size(), false);
    for (std::size_t i : autoswap_choose(base_, order_, limit)) taken[i] = true;
    for (std::size_t next = 0;;) {
      p.swapped.clear();
      for (std::size_t i = 0; i < order_.size(); ++i)
        if (taken[i]) p.swapped.push_back(order_[i].tensor);
      Schedule s = plan_schedule(net_, batch_, p, kernels_);
      while (next < order_.size() && taken[next]) ++next;
      if (s.peak_load_bytes <= limit || next >= order_.size()) return s;
      taken[next] = true;
    }
  }

 private:
  const Network& net_;
  std::int64_t batch_;
  PlanSettings train_;
  const KernelQueries& kernels_;
  Schedule base_;
  std::vector<SwapCandidate> order_;
};

struct AutoSwapChoice {
  std::size_t load_limit_bytes = 0;  // 0: none; 1: every candidate
  std::size_t least_pool_bytes = 0;  // the pool with every candidate offloaded: the least this mode can do
  Schedule train;
};

// AutoSwap under a budget: the largest load limit, in whole MiB, whose
// train schedule fits the budget's pool, so that as little is offloaded as
// the budget allows; no limit when the schedule without offloads fits or
// there is no budget, every candidate when nothing else fits (the caller
// then refuses a budget below the least pool).
AutoSwapChoice choose_autoswap(const AutoSwapSchedules& schedules, const std::string& heuristic, std::size_t budget) {
  const Schedule lowest = schedules.at(1);
  Schedule none = schedules.at(0);
  AutoSwapChoice c{0, needed_pool(lowest, heuristic), {}};
  if (!budget || needed_pool(none, heuristic) <= budget) {
    c.train = std::move(none);
    return c;
  }
  std::size_t lo = (lowest.peak_load_bytes + kMiB - 1) / kMiB, hi = none.peak_load_bytes / kMiB;  // in MiB
  c.load_limit_bytes = 1;
  c.train = lowest;
  if (c.least_pool_bytes > budget || lo > hi) return c;
  // lo's schedule is about as small as `lowest`'s: find the largest limit
  // that fits (the pool is not strictly monotone in the limit, so the
  // answer is checked).
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (needed_pool(schedules.at(mid * kMiB), heuristic) <= budget)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (Schedule s = schedules.at(lo * kMiB); needed_pool(s, heuristic) <= budget) {
    c.load_limit_bytes = lo * kMiB;
    c.train = std::move(s);
  }
  return c;
}

// Whether park_in(train, traces, heuristic, pool).horizon is at least
// `least`, for one schedule in many pools: whether any horizon of at least
// `least` fits, asked smallest first (the one that fits most often), so
// that a yes usually costs one replay and a no never tries the horizons
// below `least`. A replay that fails tells which larger pools fail alike
// (ScheduleReplay::fails_alike_to: pytorch's segments in a tight pool),
// and those are answered without replaying.
class ParkingProbe {
 public:
  ParkingProbe(const Schedule& train, const ScheduleTraces& traces, const std::string& heuristic)
      : train_(train), traces_(traces), heuristic_(heuristic) {}

  bool parks_at_least(std::size_t pool, int least) {
    if (!train_.can_park()) return false;
    for (auto h = std::rbegin(kParkHorizons); h != std::rend(kParkHorizons); ++h) {
      if (*h < least || known_to_fail(*h, pool)) continue;
      const ScheduleReplay r = replay_schedule(traces_, heuristic_, pool, *h);
      if (r.fits()) return true;
      failed_.push_back({*h, pool, r.fails_alike_to});
    }
    return false;
  }

 private:
  struct Failed {
    int horizon;
    std::size_t from, to;  // the pools failing alike
  };
  bool known_to_fail(int horizon, std::size_t pool) const {
    return std::any_of(failed_.begin(), failed_.end(),
                       [&](const Failed& f) { return f.horizon == horizon && f.from <= pool && pool <= f.to; });
  }

  const Schedule& train_;
  const ScheduleTraces& traces_;
  const std::string& heuristic_;
  std::vector<Failed> failed_;
};

// A larger pool that parks more, for the user who wants the waits gone:
// where one block at a time stays parked when none does now, else where
// every block can stay until needed. In whole MiB, which is what people
// type and what the window's slider sets: found by doubling the room above
// the pool in effect until a pool parks that much, then halving back
// between the last that did not and the first that did. Parking is not
// monotone in the pool size, so a smaller pool may park as much too; the
// one named is checked to. Inside a reserved arena, or under the pool in
// which every block of the iteration fits end to end; 0 where there is
// none.
std::size_t parking_hint(const Schedule& train, const ScheduleTraces& traces, const std::string& heuristic,
                         std::size_t pool, std::size_t arena_bytes) {
  if (train.park_horizon == kParkUntilNeeded || !train.can_park()) return 0;
  const int wanted = train.park_horizon == 0 ? 1 : kParkUntilNeeded;
  const std::size_t most = (arena_bytes ? arena_bytes : total_alloc_bytes(trace_of(train, 2))) / kMiB;
  ParkingProbe probe(train, traces, heuristic);
  auto parks_more = [&](std::size_t mib) { return probe.parks_at_least(mib * kMiB, wanted); };
  std::size_t no = pool / kMiB, step = 1;  // in MiB; `no` parks less (or is below the pool)
  while (no + step <= most && !parks_more(no + step)) {
    no += step;
    step *= 2;
  }
  if (no + step > most) return 0;
  std::size_t yes = no + step;
  while (yes - no > 1) {
    const std::size_t mid = no + (yes - no) / 2;
    (parks_more(mid) ? yes : no) = mid;
  }
  return yes * kMiB;
}

// Room for keeping everything on the device (the fastest conv scheme, the
// hungriest heuristic) plus a quarter, for an arena a budget may grow into.
std::size_t roomy_arena(const Network& net, std::int64_t batch, const MemorySettings& settings, const KernelQueries& kernels) {
  PlanSettings base{Phase::train, settings, {}};
  base.memory.mode = OffloadMode::base;
  base.memory.scheme = ConvScheme::p;
  const Schedule s = plan_schedule(net, batch, base, kernels);
  std::size_t most = 0;
  for (const std::string& h : allocator_names()) most = std::max(most, needed_pool(s, h));
  return most + most / 4;
}

// Mode accudnn's train schedule: `all`'s feature maps offloaded where the
// model says they go without a stall, the others kept, as
// choose_accudnn_offloads decides in the budget. Keeping maps moves where
// the planner issues the remaining prefetches (its lookahead counts the
// offloaded layers), so the choice is made again on the schedule it gives
// until nothing more needs keeping. AccUDNN counts bytes and the pool
// places blocks, so where the kept maps do not fit the pool after all, the
// largest are offloaded again until the schedule fits; and where that
// leaves a stall but the pool holds everything, everything is kept (one
// of AccUDNN's choices too, and it stalls nothing).
Schedule accudnn_train(const Network& net, std::int64_t batch, const PlanSettings& train, const KernelQueries& kernels,
                       const PerfModel& model, const Schedule& all, MemoryPlan& p) {
  constexpr int kRounds = 8;  // each round keeps more; in practice two or three settle it
  const std::size_t budget = train.memory.budget_bytes;
  PlanSettings chosen = train;
  std::vector<int> kept;
  Schedule s = all;
  for (int round = 0; round < kRounds; ++round) {
    const AccudnnOffloads c = choose_accudnn_offloads(net, s, model, kernels, budget);
    if (c.pinned.empty()) break;
    kept.insert(kept.end(), c.pinned.begin(), c.pinned.end());
    chosen.swapped = c.offloaded;
    s = plan_schedule(net, batch, chosen, kernels);
  }
  if (kept.empty()) {  // nothing stalls: everything goes, as in `all`, planned as mode accudnn
    for (std::size_t t = 0; t < all.tensors.size(); ++t)
      if (all.tensors[t].offloaded) chosen.swapped.push_back(static_cast<int>(t));
    s = plan_schedule(net, batch, chosen, kernels);
  }
  // Fits as the plan checks it: two iterations replayed in the pool.
  auto fits = [&](const Schedule& x) { return !budget || replay_schedule(x, train.memory.heuristic, budget, 0).fits(); };
  auto bytes = [&](int t) { return all.tensors[static_cast<std::size_t>(t)].info.bytes(); };
  std::stable_sort(kept.begin(), kept.end(), [&](int a, int b) { return bytes(a) > bytes(b); });
  while (!kept.empty() && !fits(s)) {
    chosen.swapped.push_back(kept.front());
    kept.erase(kept.begin());
    std::sort(chosen.swapped.begin(), chosen.swapped.end());
    s = plan_schedule(net, batch, chosen, kernels);
  }
  std::sort(kept.begin(), kept.end());
  p.accudnn_pinned = std::move(kept);
  const Prediction predicted = predict(net, s, model, kernels);
  p.accudnn_stall_free = predicted.stall_us <= kStallTolerance * predicted.iteration_us;
  if (!p.accudnn_stall_free) {
    chosen.swapped.clear();
    Schedule everything = plan_schedule(net, batch, chosen, kernels);
    if (fits(everything)) {
      p.accudnn_pinned.clear();
      for (std::size_t t = 0; t < all.tensors.size(); ++t)
        if (all.tensors[t].offloaded) p.accudnn_pinned.push_back(static_cast<int>(t));
      p.accudnn_stall_free = true;
      return everything;
    }
  }
  return s;
}

}  // namespace

MemoryPlan plan_memory(const Network& net, std::int64_t batch, const MemorySettings& settings, const KernelQueries& kernels,
                       const MemoryLimits& limits, const PerfModel* model) {
  const std::string& heuristic = settings.heuristic;
  make_allocator(heuristic, 0);  // throws for an unknown name, listing the valid ones
  if (batch <= 0) throw std::invalid_argument("batch size must be positive");
  if (settings.lookahead < 0) throw std::invalid_argument("prefetch lookahead must not be negative");
  if (settings.ranks < 1) throw std::invalid_argument("a run needs at least one rank, not " + std::to_string(settings.ranks));
  if (settings.ranks > 1 && settings.bucket_bytes == 0)
    throw std::invalid_argument("gradient buckets must hold at least one byte (--bucket-mb)");
  if (settings.mode == OffloadMode::dyn)
    throw std::invalid_argument("mode dyn picks a mode by profiling; plan the mode it picks");
  if (const std::string why = kernels.refuses_16bit(activation_dtype(settings.precision)); !why.empty())
    throw std::invalid_argument(why);
  // Compression already keeps offloads in pageable memory, reached through
  // its pinned staging slots, and runs on the transfer streams.
  if (settings.compress && settings.host_memory == HostMemory::pageable)
    throw std::invalid_argument("--compress keeps offloads compressed in pageable host memory already, through two "
                                "pinned staging slots; --host-memory pageable is for uncompressed offloads");
  if (settings.compress && settings.copy_engine == CopyEngine::threads)
    throw std::invalid_argument("--compress compresses on the offload and prefetch streams; --copy-engine threads "
                                "copies without them: use one or the other");

  MemoryPlan p;
  p.settings = settings;
  p.batch = batch;
  const PlanSettings train{Phase::train, settings, {}}, eval{Phase::eval, settings, {}};
  std::size_t least_train = 0;  // AutoSwap: the train schedule's least pool over every load limit
  if (settings.mode == OffloadMode::autoswap) {
    AutoSwapChoice c = choose_autoswap(AutoSwapSchedules(net, batch, train, kernels), heuristic, settings.budget_bytes);
    p.load_limit_bytes = c.load_limit_bytes;
    least_train = c.least_pool_bytes;
    p.train = std::move(c.train);
  } else if (settings.mode == OffloadMode::accudnn) {
    if (!model)
      throw std::invalid_argument("mode accudnn plans with a performance model: give --profile (a file from "
                                  "`tidepool profile`, or a GPU specification), or run on --device sim");
    PlanSettings with_all = train;
    with_all.memory.mode = OffloadMode::all;
    const Schedule all = plan_schedule(net, batch, with_all, kernels);
    least_train = needed_pool(all, heuristic);
    p.train = accudnn_train(net, batch, train, kernels, *model, all, p);
  } else if (settings.mode == OffloadMode::hybrid) {
    if (!model)
      throw std::invalid_argument("mode hybrid weighs offloads against recomputes with a performance model: give "
                                  "--profile (a file from `tidepool profile`, or a GPU specification), or run on "
                                  "--device sim");
    // In a budget, every fixed policy's schedule competes with the mix.
    std::vector<Schedule> alternatives;
    if (settings.budget_bytes) {
      auto with = [&](OffloadMode mode) {
        PlanSettings s = train;
        s.memory.mode = mode;
        return s;
      };
      for (OffloadMode mode : {OffloadMode::all, OffloadMode::conv, OffloadMode::aconv, OffloadMode::recompute,
                               OffloadMode::recompute_cheap})
        alternatives.push_back(plan_schedule(net, batch, with(mode), kernels));
      alternatives.push_back(
          choose_autoswap(AutoSwapSchedules(net, batch, with(OffloadMode::autoswap), kernels), heuristic,
                          settings.budget_bytes)
              .train);
      MemoryPlan scratch;
      alternatives.push_back(
          accudnn_train(net, batch, with(OffloadMode::accudnn), kernels, *model, alternatives.front(), scratch));
    }
    HybridChoice c = choose_hybrid(net, batch, train, kernels, *model, alternatives);
    least_train = c.least_pool_bytes;
    p.hybrid_from = std::move(c.from);
    p.train = std::move(c.train);
  } else {
    p.train = plan_schedule(net, batch, train, kernels);
  }
  p.eval = plan_schedule(net, batch, eval, kernels);

  const std::size_t train_pool = needed_pool(p.train, heuristic), eval_pool = needed_pool(p.eval, heuristic);
  p.needed_pool_bytes = std::max(train_pool, eval_pool);
  p.minimum_pool_bytes = std::max(least_train ? least_train : train_pool, eval_pool);
  p.pool_bytes = settings.budget_bytes ? settings.budget_bytes : p.needed_pool_bytes;

  const std::string what = net.name() + " at batch " + std::to_string(batch) + " (mode " + to_string(settings.mode) +
                           ", " + heuristic + ")";
  if (limits.arena_bytes && p.pool_bytes > limits.arena_bytes)
    throw MemoryRefusal("a budget of " + format_bytes(p.pool_bytes) + " exceeds the " + format_bytes(limits.arena_bytes) +
                            " of device memory this run reserved",
                        p.minimum_pool_bytes);
  if (limits.arena_bytes && settings.host_memory != limits.host_memory)
    throw MemoryRefusal(std::string("this run keeps its offloads in ") + to_string(limits.host_memory) +
                            " host memory, reserved when it started: start a new run with --host-memory " +
                            to_string(settings.host_memory),
                        p.minimum_pool_bytes);
  if (limits.arena_bytes && p.train.pinned_bytes > limits.offload_host_bytes)  // a run started with compression
    throw MemoryRefusal(std::string(settings.compress ? "" : "uncompressed ") + "offloads in mode " +
                            to_string(settings.mode) + " need " + format_bytes(p.train.pinned_bytes) +
                            " of pinned host memory; this run reserved " + format_bytes(limits.offload_host_bytes) +
                            " for compressed ones: start a new run to offload uncompressed",
                        p.minimum_pool_bytes);
  // Two iterations of each schedule in the pool, as every fit check. The
  // train schedule's traces are made once for its many replays below.
  const ScheduleTraces train_traces(p.train);
  const ScheduleReplay unparked = replay_schedule(train_traces, heuristic, p.pool_bytes, 0);
  if (!unparked.fits() || !replay_schedule(p.eval, heuristic, p.pool_bytes, 0).fits())
    throw MemoryRefusal("a budget of " + format_bytes(p.pool_bytes) + " is too small for " + what +
                            ": the " + fact_info(MemoryFact::minimum_pool).label + " is " +
                            fact_text(p.summary(), MemoryFact::minimum_pool),
                        p.minimum_pool_bytes);

  // Async transfers park as many offloaded blocks as fit. Every outcome is
  // deterministic, so the run places every block where the dry run did,
  // and the numbers are the same either way.
  const ParkChoice parked = park_in(p.train, train_traces, heuristic, p.pool_bytes);
  p.train.park_horizon = parked.horizon;
  p.figures = (parked.replay ? *parked.replay : unparked).steady.figures;
  p.parking_pool_bytes = parking_hint(p.train, train_traces, heuristic, p.pool_bytes, limits.arena_bytes);

  if (model)
    p.predicted = predict_in_pool(net, p.train, *model, kernels, heuristic, p.pool_bytes, train_traces, parked.horizon);

  if (settings.compress) {
    PlanSettings plain = p.train.settings;
    plain.memory.compress = false;
    p.uncompressed_pinned_bytes = plan_schedule(net, batch, plain, kernels).pinned_bytes;
  } else {
    p.uncompressed_pinned_bytes = p.train.pinned_bytes;
  }

  // The loss is the same few floats in every schedule of the network;
  // fp16's overflow flag follows it (engine/run/executor.cpp).
  p.readback_pinned_bytes = std::max(p.train.tensors[p.train.loss].info.bytes(),
                                     p.eval.tensors[p.eval.loss].info.bytes()) + sizeof(float);
  p.readback_pinned_bytes = (p.readback_pinned_bytes + 63) / 64 * 64;  // what follows stays aligned

  if (limits.arena_bytes) {
    p.arena_bytes = limits.arena_bytes;
    p.offload_host_bytes = limits.offload_host_bytes;
  } else {
    p.arena_bytes = std::max(p.pool_bytes, limits.room_to_grow ? roomy_arena(net, batch, settings, kernels) : 0);
    // Pinned memory for the worst case, every layer's input offloaded, so
    // that a later change of mode needs no new reservation. Compressed
    // offloads need only their staging slots: reserving that little is the
    // point of compressing, so such a run cannot turn compression off later.
    PlanSettings all{Phase::train, settings, {}};
    all.memory.mode = OffloadMode::all;
    p.offload_host_bytes = std::max(p.train.pinned_bytes, plan_schedule(net, batch, all, kernels).pinned_bytes);
  }
  return p;
}

Schedule plan_autoswap(const Network& net, std::int64_t batch, const MemorySettings& settings, const KernelQueries& kernels,
                       std::size_t load_limit_bytes) {
  PlanSettings train{Phase::train, settings, {}};
  train.memory.mode = OffloadMode::autoswap;
  return AutoSwapSchedules(net, batch, train, kernels).at(load_limit_bytes);
}

Schedule plan_eval(const Network& net, std::int64_t batch, const MemorySettings& settings, const KernelQueries& kernels) {
  return plan_schedule(net, batch, {Phase::eval, settings, {}}, kernels);
}

}  // namespace tidepool
