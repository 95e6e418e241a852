// vDNN++'s pool-size search, on the paper's own sequences: the 9-versus-11
// unit best-fit example (§IV-B) and the sequence no placement serves at its
// peak load (§III-B).
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>

#include <iostream>
#include <stdexcept>
#include <utility>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/replay.h"
#include "engine/memory/allocator.h"
#include "engine/memory/allocators/pytorch.h"
#include "engine/device/gpu_queries.h"
#include "engine/perf/spec_profiles.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/paper_sequences.h"
#include "engine/plan/planner.h"
#include "engine/memory/pool_search.h"
#include "testing/networks.h"
#include "models/registry.h"
#include "testing/traces.h"

namespace tidepool {
namespace {

using testing::alloc;
using testing::release;

constexpr std::size_t U = kAllocGranularity;  // one unit of the papers' examples
constexpr std::size_t kMiB = std::size_t{1} << 20;

// The papers' sequences (engine/memory/paper_sequences.h): §IV-B's
// A1(5), A2(2), A3(1), D2, A4(1), D1, D3, A5(8), and §III-B's
// a11 a12 a13 a14 d1 a22 a23 a24 d2 a33 a34 d3 a44 d4, whose unit is three
// granules, so 1/3 unit is one granule.
constexpr std::size_t kThird = kAllocGranularity;

// `park_horizon`: a schedule's trace marks the frees async offloads may
// park; the replay parks as many as the horizon allows (a plain trace: all).
bool serves(const AllocTrace& trace, std::string_view heuristic, std::size_t pool,
            int park_horizon = kParkUntilNeeded) {
  auto a = make_allocator(heuristic, pool);
  return replay(trace, *a, park_horizon).fits;
}

TEST(PoolSearch, BestFitServesNineUnitsButNotEleven) {
  const AllocTrace t = nine_versus_eleven().trace;
  ASSERT_EQ(nine_versus_eleven().unit_bytes, U);
  EXPECT_EQ(peak_load_bytes(t), 9 * U);
  EXPECT_TRUE(serves(t, "best-fit", 9 * U));
  auto eleven = make_allocator("best-fit", 11 * U);
  const TraceReplay r = replay(t, *eleven);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.failed_event, 7) << "A5(8) fails: A4 took the 2-unit hole, splitting the free space 5 + 5";
  EXPECT_EQ(r.failure.request_bytes, 8 * U);
  EXPECT_EQ(r.failure.largest_free_bytes, 5 * U);
}

TEST(PoolSearch, FindsASufficientPoolNotNecessarilyTheSmallest) {
  const AllocTrace t = nine_versus_eleven().trace;
  // From the peak load the first replay already fits.
  const PoolSearch from_peak = search_pool_size(t, "best-fit");
  EXPECT_EQ(from_peak.start_bytes, 9 * U);
  EXPECT_EQ(from_peak.pool_bytes, 9 * U);
  EXPECT_EQ(from_peak.restarts, 0);
  // Started at 11 units it fails, grows by 8 − 5 = 3 units and stops at
  // 14: sufficient, yet 9 would have done. The search never goes back down.
  const PoolSearch from_eleven = search_pool_size(t, "best-fit", 11 * U);
  EXPECT_EQ(from_eleven.restarts, 1);
  EXPECT_EQ(from_eleven.pool_bytes, 14 * U);
  EXPECT_TRUE(from_eleven.replay.fits);
  EXPECT_TRUE(serves(t, "best-fit", from_eleven.pool_bytes));
}

TEST(PoolSearch, NoPolicyServesTheUnavoidableSequenceAtItsPeakLoad) {
  const AllocTrace t = unavoidable_fragmentation().trace;
  ASSERT_EQ(unavoidable_fragmentation().unit_bytes, 3 * kThird);
  const std::size_t peak = peak_load_bytes(t);
  ASSERT_EQ(peak, 12 * kThird) << "4 units";
  for (const std::string& name : allocator_names()) {
    SCOPED_TRACE(name);
    const PoolSearch s = search_pool_size(t, name);
    std::cout << "  §III-B sequence, " << name << ": peak load " << peak / kThird << " thirds, pool search "
              << s.pool_bytes / kThird << " thirds after " << s.restarts << " restarts\n";
    // Whatever the placement, some d_j finds the freed blocks split.
    EXPECT_FALSE(serves(t, name, peak));
    EXPECT_GT(s.pool_bytes, peak);
    EXPECT_GE(s.restarts, 1);
    EXPECT_TRUE(serves(t, name, s.pool_bytes)) << "the result is sufficient";
    if (name == "exact") {
      // The per-tensor ideal reports the peak load as its footprint even
      // though its best-fit offsets cannot live in a pool that size.
      auto unbounded = make_allocator(name, total_alloc_bytes(t));
      const TraceReplay r = replay(t, *unbounded);
      EXPECT_EQ(r.figures.footprint_bytes, peak);
      EXPECT_EQ(r.figures.peak_load_bytes, peak) << "footprint = peak load: competitive ratio 1";
    }
  }
  // Best fit, worked by hand: at 12 thirds a34 finds only 1-third holes
  // (grow by 1); at 13, a44 (6 thirds) finds at most 3 (grow by 3); 16 fits.
  const PoolSearch best = search_pool_size(t, "best-fit");
  EXPECT_EQ(best.pool_bytes, 16 * kThird);
  EXPECT_EQ(best.restarts, 2);
}

TEST(PoolSearch, GrowsByWhatTheFailedRequestLacked) {
  // Two 4-unit blocks with a 2-unit hole between them, then a 6-unit
  // request: at the peak load, 14 units, best fit has the 2-unit hole and a
  // 4-unit tail, so it lacks 2 units.
  const AllocTrace t = {alloc(0, 4 * U), alloc(1, 2 * U), alloc(2, 4 * U), release(1), alloc(3, 6 * U)};
  const PoolSearch s = search_pool_size(t, "best-fit");
  EXPECT_EQ(s.start_bytes, 14 * U);
  EXPECT_EQ(s.restarts, 1);
  EXPECT_EQ(s.pool_bytes, 16 * U) << "grown by 6 − 4 units";
}

TEST(PoolSearch, APolicyThatNeverFitsStopsWithAnError) {
  class Refuses final : public Allocator {
   public:
    std::string_view name() const override { return "refuses"; }
    std::optional<std::size_t> allocate(const AllocRequest&) override { return std::nullopt; }
    void free(std::size_t) override {}
    PoolStats stats() const override { return {}; }
  };
  const AllocTrace t = {alloc(0, 4 * U)};
  EXPECT_THROW(search_pool_size(t, [](std::size_t) { return std::make_unique<Refuses>(); }), std::runtime_error);
  EXPECT_THROW(search_pool_size(t, "worst-fit"), std::invalid_argument);
}

TEST(PoolSearch, EmptyTraceNeedsNoPool) {
  const PoolSearch s = search_pool_size(AllocTrace{}, "best-fit");
  EXPECT_EQ(s.pool_bytes, 0u);
  EXPECT_EQ(s.restarts, 0);
}

TEST(PoolSearch, ScheduleSearchGivesEveryPolicyAPoolARealReplayFits) {
  // The planner's schedules: high-end's footprint in an unbounded pool is
  // the pool itself, so the search is how its pool is sized.
  CpuKernels kernels;
  const Network net = testing::residual_net();
  const Schedule s = plan_schedule(net, 4, {.memory = {.mode = OffloadMode::all}}, kernels);
  for (const std::string& name : allocator_names()) {
    SCOPED_TRACE(name);
    const PoolSearch found = search_pool_size(s, name);
    EXPECT_GE(found.pool_bytes, s.peak_load_bytes);
    // (pytorch claims whole segments, 2 MiB for any small request, so
    // its pool for this small network is its segments, not its load.)
    if (name != "pytorch") {
      EXPECT_LT(found.pool_bytes, 2 * s.peak_load_bytes);
    }
    EXPECT_TRUE(serves(trace_of(s, 3), name, found.pool_bytes, s.park_horizon)) << "every later iteration fits as well";
  }
}

// A policy as it is, but never widened and never telling what a larger
// pool would lack: the search replays every pool from the start, as it
// did before Allocator::widen and Allocator::lacking_in_pool.
class EveryPoolReplayed final : public Allocator {
 public:
  explicit EveryPoolReplayed(std::unique_ptr<Allocator> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  std::optional<std::size_t> allocate(const AllocRequest& r) override { return inner_->allocate(r); }
  void free(std::size_t offset) override { inner_->free(offset); }
  PoolStats stats() const override { return inner_->stats(); }
  std::span<const std::size_t> pool_starts() const override { return inner_->pool_starts(); }
  std::size_t lacking_bytes(const AllocRequest& r) const override { return inner_->lacking_bytes(r); }

 private:
  std::unique_ptr<Allocator> inner_;
};

// Going on from the failed request in a widened pool finds what starting
// again finds: the same pool after the same restarts, and the same
// figures. cnmem without an initial pool (the registry's) restarts many
// times on resnet20's offloading schedule, the case widening is for.
TEST(PoolSearch, GoingOnInAWidenedPoolFindsWhatStartingAgainFinds) {
  CpuKernels kernels;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  for (OffloadMode mode : {OffloadMode::base, OffloadMode::all, OffloadMode::aconv}) {
    SCOPED_TRACE(to_string(mode));
    const AllocTrace trace = trace_of(plan_schedule(net, 64, {.memory = {.mode = mode}}, kernels), 2);
    // Nothing parked (park horizon 0): a parking loop gives blocks back
    // while it fails, so only an unparked search widens.
    const PoolSearch widened =
        search_pool_size(trace, [](std::size_t pool) { return make_allocator("cnmem", pool); }, 0, 0);
    const PoolSearch again = search_pool_size(
        trace, [](std::size_t pool) { return std::make_unique<EveryPoolReplayed>(make_allocator("cnmem", pool)); }, 0,
        0);
    EXPECT_EQ(widened.pool_bytes, again.pool_bytes);
    EXPECT_EQ(widened.restarts, again.restarts);
    EXPECT_GT(widened.restarts, 0) << "no restart: the test shows nothing";
    EXPECT_LT(widened.replays, again.replays);
    EXPECT_EQ(again.replays, again.restarts + 1);
    EXPECT_EQ(widened.replay.figures.peak_load_bytes, again.replay.figures.peak_load_bytes);
    EXPECT_EQ(widened.replay.figures.footprint_bytes, again.replay.figures.footprint_bytes);
    EXPECT_EQ(widened.replay.figures.largest_free_at_peak, again.replay.figures.largest_free_at_peak);
    EXPECT_EQ(widened.replay.figures.holes_at_peak_bytes, again.replay.figures.holes_at_peak_bytes);
    EXPECT_EQ(widened.replay.stats.largest_free_block_bytes, again.replay.stats.largest_free_block_bytes);
    EXPECT_EQ(widened.replay.stats.extent_bytes, again.replay.stats.extent_bytes);
  }
  EXPECT_TRUE(make_allocator("cnmem", 1 << 20)->widen(2 << 20)) << "the registry's cnmem claims pools as it needs them";
  // A policy whose placements depend on the pool's size is never widened.
  EXPECT_FALSE(make_allocator("best-fit", 1 << 20)->widen(2 << 20));
  EXPECT_FALSE(make_cnmem_allocator(1 << 20, 1 << 16)->widen(2 << 20)) << "an initial pool";
}

// A schedule's replay that fails says which larger pools fail alike
// (ScheduleReplay::fails_alike_to), and replaying them says the same: the
// parking hint's search answers those pools without replaying. ResNet-152
// on the V100's answers, its convolutions' inputs offloaded and parked
// until needed, in pools above the one that serves it unparked.
TEST(PoolSearch, AFailedScheduleReplayTellsWhichLargerPoolsFailAlike) {
  const Profile profile = *specification_profile("v100");
  const GpuQueries queries{profile.gpu};
  const Network net = models::make_model("resnet152", models::InputKind::imagenet, 1000);
  const Schedule schedule = plan_schedule(net, 128, {.memory = {.mode = OffloadMode::conv}}, queries);
  const ScheduleTraces traces(schedule);
  auto failed_at = [](const ScheduleReplay& r) {
    return std::pair{r.first.fits, r.first.fits ? r.steady.failed_event : r.first.failed_event};
  };
  const std::size_t least = search_pool_size(schedule, "pytorch").pool_bytes;
  int told = 0;
  for (std::size_t pool = least; pool < least + (std::size_t{2} << 30); pool += 48 * kMiB) {
    const ScheduleReplay r = replay_schedule(traces, "pytorch", pool, kParkUntilNeeded);
    if (r.fits()) continue;
    ASSERT_GE(r.fails_alike_to, pool);
    if (r.fails_alike_to == pool) continue;
    ++told;
    const std::size_t between = (pool + r.fails_alike_to) / 2 / kAllocGranularity * kAllocGranularity;
    for (std::size_t larger : {pool + kAllocGranularity, between, r.fails_alike_to}) {
      SCOPED_TRACE(std::to_string(pool) + " -> " + std::to_string(larger));
      const ScheduleReplay again = replay_schedule(traces, "pytorch", larger, kParkUntilNeeded);
      EXPECT_FALSE(again.fits());
      EXPECT_EQ(failed_at(again), failed_at(r));
    }
  }
  std::cout << told << " failed pools told of larger ones\n";
  EXPECT_GE(told, 3) << "no failure told of a larger pool: the test shows nothing";
}

// pytorch in a tight pool can fail at the same segment pool after pool
// (on resnet152 with an AVX-512 processor's cpu plan, 30 pools, each
// 2 MiB larger); stepping over the pools it can tell would fail alike
// finds what replaying each finds: the same pool after the same restarts,
// the same figures, in fewer replays. On the V100's answers (the host's
// kernels do not matter), where VGG-16 and ResNet-152 offloading their
// convolutions' inputs step over a few; with the offloaded blocks parked
// too (the loop gives parked blocks back and asks again while a request
// fails).
TEST(PoolSearch, SteppingOverPoolsThatFailAlikeFindsWhatReplayingEachFinds) {
  const Profile profile = *specification_profile("v100");
  const GpuQueries queries{profile.gpu};
  int stepped = 0, stepped_parking = 0;
  for (const auto& [model, batch] : {std::pair{"vgg16", 64}, std::pair{"resnet152", 128}}) {
    for (const int horizon : {0, kParkUntilNeeded}) {
      SCOPED_TRACE(std::string(model) + (horizon ? ", parking" : ""));
      const Network net = models::make_model(model, models::InputKind::imagenet, 1000);
      const AllocTrace trace = trace_of(plan_schedule(net, batch, {.memory = {.mode = OffloadMode::conv}}, queries), 2);
      auto pytorch = [](std::size_t pool) { return make_allocator("pytorch", pool); };
      const PoolSearch stepping = search_pool_size(trace, pytorch, 0, horizon);
      auto every_pool = [](std::size_t pool) {
        return std::make_unique<EveryPoolReplayed>(make_allocator("pytorch", pool));
      };
      const PoolSearch again = search_pool_size(trace, every_pool, 0, horizon);
      EXPECT_EQ(stepping.pool_bytes, again.pool_bytes);
      EXPECT_EQ(stepping.restarts, again.restarts);
      EXPECT_EQ(again.replays, again.restarts + 1);
      (horizon ? stepped_parking : stepped) += again.replays - stepping.replays;
      EXPECT_EQ(stepping.replay.figures.peak_load_bytes, again.replay.figures.peak_load_bytes);
      EXPECT_EQ(stepping.replay.figures.footprint_bytes, again.replay.figures.footprint_bytes);
      EXPECT_EQ(stepping.replay.figures.largest_free_at_peak, again.replay.figures.largest_free_at_peak);
      EXPECT_EQ(stepping.replay.figures.holes_at_peak_bytes, again.replay.figures.holes_at_peak_bytes);
      EXPECT_EQ(stepping.replay.stats.extent_bytes, again.replay.stats.extent_bytes);
      std::cout << model << (horizon ? ", parking" : "") << ": " << again.restarts << " restarts, " << stepping.replays
                << " replays of " << again.replays << "\n";
    }
  }
  EXPECT_GE(stepped, 4) << "nothing stepped over: the test shows nothing";
  EXPECT_GE(stepped_parking, 4) << "nothing stepped over while parking: the test shows nothing";
}

AllocRequest mib(std::size_t n) { return AllocRequest{.bytes = n * kMiB}; }

// A hand-made sequence of requests whose last one is the one that fails in
// a tight pool; true when that one was served.
using Sequence = std::function<bool(Allocator&)>;
struct Ran {
  std::unique_ptr<Allocator> allocator;
  bool served = false;
};
Ran run_pytorch(std::size_t pool_mib, const Sequence& sequence, const PytorchAllocConf& conf = {}) {
  Ran r{make_pytorch_allocator(pool_mib * kMiB, conf)};
  r.served = sequence(*r.allocator);
  return r;
}

// What `tight` (the sequence's last request failed there) tells of each
// larger pool is what a fresh allocator of that pool says: 0 where it
// serves the request, else what it lacks for it.
void expect_told_as_replayed(const Allocator& tight, const Sequence& sequence, const AllocRequest& last,
                             std::initializer_list<std::size_t> pools_mib) {
  for (std::size_t pool : pools_mib) {
    SCOPED_TRACE(pool);
    const std::optional<std::size_t> told = tight.lacking_in_pool(pool * kMiB);
    ASSERT_TRUE(told);
    const Ran fresh = run_pytorch(pool, sequence);
    EXPECT_EQ(*told == 0, fresh.served);
    if (!fresh.served) EXPECT_EQ(*told, fresh.allocator->lacking_bytes(last));
  }
}

// What pytorch says a larger pool would lack is what a fresh allocator of
// that pool lacks, or 0 where that one serves the request: 12 MiB
// segments A and B, A freed and cached, then C needs a 14 MiB segment.
// In 30 MiB it misses (6 MiB free at the end), releases A, and still
// fails (12 MiB at the start, 6 at the end): 2 MiB short. An arena 8 MiB
// longer would have held C at its end before releasing anything.
TEST(PoolSearch, PytorchTellsWhatALargerPoolWouldLack) {
  auto sequence = [](std::size_t c_mib) -> Sequence {
    return [c_mib](Allocator& a) {
      const std::optional<std::size_t> at = a.allocate(mib(12));
      (void)a.allocate(mib(12));  // B (expandable segments in 30 MiB have no room for it)
      if (at) a.free(*at);
      return a.allocate(mib(c_mib)).has_value();
    };
  };
  const Ran tight = run_pytorch(30, sequence(14));
  ASSERT_FALSE(tight.served);
  EXPECT_EQ(tight.allocator->lacking_bytes(mib(14)), 2 * kMiB);
  expect_told_as_replayed(*tight.allocator, sequence(14), mib(14), {32, 34, 36, 37, 38, 40, 60});
  EXPECT_EQ(*tight.allocator->lacking_in_pool(36 * kMiB), 2 * kMiB);
  EXPECT_EQ(*tight.allocator->lacking_in_pool(38 * kMiB), 0u) << "C at the end, nothing released";
  EXPECT_FALSE(tight.allocator->lacking_in_pool(30 * kMiB)) << "not a larger pool";
  EXPECT_FALSE(make_allocator("pytorch", 30 * kMiB)->lacking_in_pool(40 * kMiB)) << "nothing failed";
  // Oversize releases and expandable segments place otherwise in a larger pool.
  EXPECT_FALSE(run_pytorch(30, sequence(14), {.max_split_size_bytes = 8 * kMiB}).allocator->lacking_in_pool(32 * kMiB));
  // (Expandable segments grow by 20 MiB pages: in 30 MiB, B has no room,
  // and a C of 24 MiB none either.)
  const Ran expandable = run_pytorch(30, sequence(24), {.expandable_segments = true});
  ASSERT_FALSE(expandable.served);
  EXPECT_FALSE(expandable.allocator->lacking_in_pool(32 * kMiB));
  EXPECT_FALSE(make_allocator("best-fit", 1 << 20)->lacking_in_pool(2 << 20)) << "the default";
}

// Where a segment ends at the arena's end, a larger arena adds a range of
// its own there: in 24 MiB, A and B (12 MiB) fill the arena, A is freed,
// and C (14) fails after releasing A, 2 MiB short of the 12 MiB at the
// start. 2 MiB more give a 2 MiB range at the end, still 2 MiB short;
// 14 MiB more hold C there before anything is released.
TEST(PoolSearch, PytorchTellsWhatALargerPoolWouldLackWhenTheArenasEndIsReserved) {
  const Sequence sequence = [](Allocator& a) {
    const std::size_t at = *a.allocate(mib(12));
    EXPECT_TRUE(a.allocate(mib(12)));
    a.free(at);
    return a.allocate(mib(14)).has_value();
  };
  const Ran tight = run_pytorch(24, sequence);
  ASSERT_FALSE(tight.served);
  EXPECT_EQ(tight.allocator->lacking_bytes(mib(14)), 2 * kMiB);
  expect_told_as_replayed(*tight.allocator, sequence, mib(14), {26, 30, 36, 37, 38, 40});
  EXPECT_EQ(*tight.allocator->lacking_in_pool(26 * kMiB), 2 * kMiB) << "the 12 MiB at the start is still the largest";
  EXPECT_EQ(*tight.allocator->lacking_in_pool(38 * kMiB), 0u);
}

// An earlier miss that releasing rescued decides too: in 40 MiB, A, B
// (12 MiB) and C (10) leave 6 MiB at the end; A and B are freed, D (14)
// misses, releases both and goes to the start; E (20) then fails, 10 MiB
// short. An arena 8 MiB longer holds D at its end, keeps A and B cached,
// and serves E by releasing them: the larger pool's replay is another.
TEST(PoolSearch, PytorchTellsALargerPoolThatServesAnEarlierMissOtherwise) {
  const Sequence sequence = [](Allocator& a) {
    const std::size_t at_a = *a.allocate(mib(12)), at_b = *a.allocate(mib(12));
    EXPECT_TRUE(a.allocate(mib(10)));
    a.free(at_a);
    a.free(at_b);
    EXPECT_TRUE(a.allocate(mib(14)));
    return a.allocate(mib(20)).has_value();
  };
  const Ran tight = run_pytorch(40, sequence);
  ASSERT_FALSE(tight.served);
  EXPECT_EQ(tight.allocator->lacking_bytes(mib(20)), 10 * kMiB);
  expect_told_as_replayed(*tight.allocator, sequence, mib(20), {42, 44, 46, 48, 50, 52, 54, 56});
  EXPECT_EQ(*tight.allocator->lacking_in_pool(46 * kMiB), 8 * kMiB) << "D misses there too";
  EXPECT_EQ(*tight.allocator->lacking_in_pool(48 * kMiB), 0u) << "D at the end: another replay";
}

// A request that failed and was asked again decides too, as the replay
// loop asks again after giving back a parked block: in 40 MiB, X (24 MiB)
// and C (10) leave 6 MiB at the end; C is freed, D (22) misses, releases
// C and still fails (16 MiB at the end); the caller frees X and D takes
// X's block; E (40) then fails. An arena 6 MiB longer holds D at its end
// after releasing C, X stays, and E fails lacking another amount: a
// larger pool's replay that the first miss alone (16 MiB short before
// the release) would not have told apart.
TEST(PoolSearch, PytorchTellsALargerPoolThatServesAFailedRequestAskedAgainOtherwise) {
  const Sequence sequence = [](Allocator& a) {
    const std::size_t x = *a.allocate(mib(24)), c = *a.allocate(mib(10));
    a.free(c);
    if (!a.allocate(mib(22))) {
      a.free(x);
      EXPECT_TRUE(a.allocate(mib(22)));
    }
    return a.allocate(mib(40)).has_value();
  };
  const Ran tight = run_pytorch(40, sequence);
  ASSERT_FALSE(tight.served);
  for (std::size_t pool : {42, 44, 46, 50, 56}) {
    SCOPED_TRACE(pool);
    const std::optional<std::size_t> told = tight.allocator->lacking_in_pool(pool * kMiB);
    ASSERT_TRUE(told);
    if (*told == 0) continue;  // not known: a replay must tell
    const Ran fresh = run_pytorch(pool, sequence);
    EXPECT_FALSE(fresh.served);
    EXPECT_EQ(*told, fresh.allocator->lacking_bytes(mib(40)));
  }
  EXPECT_EQ(*tight.allocator->lacking_in_pool(44 * kMiB), 20 * kMiB) << "D fails there too";
  EXPECT_EQ(*tight.allocator->lacking_in_pool(46 * kMiB), 0u) << "D at the end after the release: another replay";
  EXPECT_EQ(fails_alike_to(*tight.allocator, 40 * kMiB), 46 * kMiB - kAllocGranularity);
}

}  // namespace
}  // namespace tidepool
