// vDNN++'s pool-size search, on the paper's own sequences: the 9-versus-11
// unit best-fit example (§IV-B) and the sequence no placement serves at its
// peak load (§III-B).
#include <gtest/gtest.h>

#include <memory>
#include <span>

#include <iostream>
#include <stdexcept>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/replay.h"
#include "engine/memory/allocator.h"
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

// A policy as it is, but never widened: the search starts every replay
// again, as it did before Allocator::widen.
class Unwidened final : public Allocator {
 public:
  explicit Unwidened(std::unique_ptr<Allocator> inner) : inner_(std::move(inner)) {}
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
    const PoolSearch widened = search_pool_size(trace, [](std::size_t pool) { return make_allocator("cnmem", pool); });
    const PoolSearch again = search_pool_size(
        trace, [](std::size_t pool) { return std::make_unique<Unwidened>(make_allocator("cnmem", pool)); });
    EXPECT_EQ(widened.pool_bytes, again.pool_bytes);
    EXPECT_EQ(widened.restarts, again.restarts);
    EXPECT_GT(widened.restarts, 0) << "no restart: the test shows nothing";
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

}  // namespace
}  // namespace tidepool
