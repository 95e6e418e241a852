// The peak load by role, and the parked blocks and holes beside it, as the
// replay loop computes them (engine/memory/replay.h): on traces small
// enough to place by hand, so every figure below is worked out in the
// comments, not read back from the code.
#include <gtest/gtest.h>

#include <memory>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocator.h"
#include "engine/memory/replay.h"

namespace tidepool {
namespace {

constexpr std::size_t U = kAllocGranularity;  // 256 B: every size below is whole granules

TraceEvent alloc(std::int64_t id, std::size_t bytes, Role role) {
  return {.kind = TraceEvent::Kind::alloc, .id = id, .bytes = bytes, .role = role};
}
TraceEvent free_of(std::int64_t id, bool after_copy = false) {
  return {.kind = TraceEvent::Kind::free, .id = id, .after_copy = after_copy};
}

std::size_t bytes_of(const RoleBytes& by_role, Role role) { return by_role[static_cast<int>(role)]; }

// best-fit in a pool with room to spare, every freed-after-copy block
// parked until needed (the default horizon). Offsets as best-fit places:
//   0 A weight    4U  [0, 4U)
//   1 B act.      4U  [4U, 8U)
//   2 C act.      8U  [8U, 16U)
//   3 D workspace 2U  [16U, 18U)      load 18U
//   4 B freed            hole [4U, 8U)  load 14U
//   5 C freed after copy: parked        load 6U, parked 8U
//   6 E act. grad 1U  best fit: the hole, [4U, 5U)   load 7U
//   7 F act. grad 12U only the top holds it: [18U, 30U)  load 19U, the peak
//   8 F freed, 9 D freed: the load falls again.
// At the peak (event 7): weight 4U, workspace 2U, activation gradient
// 1U + 12U; no activation (B is free, C parked). Below the extent 30U:
// C's 8U parked and the 3U of [5U, 8U) free, so 19U + 8U + 3U = 30U.
AllocTrace hand_made_trace() {
  return {alloc(0, 4 * U, Role::weight),
          alloc(1, 4 * U, Role::activation),
          alloc(2, 8 * U, Role::activation),
          alloc(3, 2 * U, Role::workspace),
          free_of(1),
          free_of(2, /*after_copy=*/true),
          alloc(4, 1 * U, Role::activation_gradient),
          alloc(5, 12 * U, Role::activation_gradient),
          free_of(5),
          free_of(3)};
}

TEST(PeakBreakdown, AHandMadeTraceBreaksDownAsWorkedOut) {
  const auto allocator = make_allocator("best-fit", 64 * U);
  const TraceReplay r = replay(hand_made_trace(), *allocator);
  ASSERT_TRUE(r.fits);
  const PoolFigures& f = r.figures;
  EXPECT_EQ(f.peak_event, 7);
  EXPECT_EQ(f.peak_load_bytes, 19 * U);
  EXPECT_EQ(bytes_of(f.peak_load_by_role, Role::weight), 4 * U);
  EXPECT_EQ(bytes_of(f.peak_load_by_role, Role::workspace), 2 * U);
  EXPECT_EQ(bytes_of(f.peak_load_by_role, Role::activation_gradient), 13 * U);
  EXPECT_EQ(bytes_of(f.peak_load_by_role, Role::activation), 0u) << "B was freed and C parked before the peak";
  for (Role r : {Role::input, Role::weight_gradient, Role::optimizer_state})
    EXPECT_EQ(bytes_of(f.peak_load_by_role, r), 0u) << to_string(r);
  EXPECT_EQ(f.parked_at_peak_bytes, 8 * U);
  EXPECT_EQ(f.holes_at_peak_bytes, 3 * U);
  EXPECT_EQ(f.largest_free_at_peak, (Range{5 * U, 3 * U})) << "the one hole is the largest";
  EXPECT_EQ(f.footprint_bytes, 30 * U);
}

// With nothing parked (horizon 0) C's block is freed at once and joins
// B's hole: [4U, 16U). E goes there, the smallest range that holds it,
// at 4U; F (12U) no longer fits the 11U left, so it goes to the top,
// [18U, 30U), as before. The load at the peak is the same; C's 8U moved
// from parked to holes.
TEST(PeakBreakdown, WithoutParkingTheParkedBytesAreHoles) {
  const auto allocator = make_allocator("best-fit", 64 * U);
  const TraceReplay r = replay(hand_made_trace(), *allocator, /*park_horizon=*/0);
  ASSERT_TRUE(r.fits);
  EXPECT_EQ(r.figures.peak_load_bytes, 19 * U);
  EXPECT_EQ(bytes_of(r.figures.peak_load_by_role, Role::activation_gradient), 13 * U);
  EXPECT_EQ(r.figures.parked_at_peak_bytes, 0u);
  // [5U, 16U) is one free range once C is freed and B's rest joins it.
  EXPECT_EQ(r.figures.holes_at_peak_bytes, 11 * U);
  EXPECT_EQ(r.figures.largest_free_at_peak, (Range{5 * U, 11 * U}));
}

// An iteration whose load never passes what it started with (a second
// iteration that only frees): its peak is the start, broken down by the
// blocks the loop held then.
TEST(PeakBreakdown, APeakAtTheStartIsTheBlocksHeldThen) {
  const auto allocator = make_allocator("best-fit", 64 * U);
  PoolReplay pool(*allocator);
  ASSERT_TRUE(replay(AllocTrace{alloc(0, 4 * U, Role::weight), alloc(1, 2 * U, Role::optimizer_state),
                                alloc(2, 6 * U, Role::input)},
                     pool)
                  .fits);
  const TraceReplay second = replay(AllocTrace{free_of(2), alloc(3, 1 * U, Role::activation)}, pool);
  ASSERT_TRUE(second.fits);
  EXPECT_EQ(second.figures.peak_event, -1) << "before any event of the second iteration";
  EXPECT_EQ(second.figures.peak_load_bytes, 12 * U);
  EXPECT_EQ(bytes_of(second.figures.peak_load_by_role, Role::weight), 4 * U);
  EXPECT_EQ(bytes_of(second.figures.peak_load_by_role, Role::optimizer_state), 2 * U);
  EXPECT_EQ(bytes_of(second.figures.peak_load_by_role, Role::input), 6 * U);
  EXPECT_EQ(bytes_of(second.figures.peak_load_by_role, Role::activation), 0u);
  EXPECT_EQ(second.figures.holes_at_peak_bytes, 0u);
}

// A CSV trace knows no roles: every block counts as an activation, so the
// breakdown still sums to the peak.
TEST(PeakBreakdown, ATraceWithoutRolesCountsActivations) {
  const auto allocator = make_allocator("first-fit", 64 * U);
  const TraceReplay r = replay(AllocTrace{{.kind = TraceEvent::Kind::alloc, .id = 0, .bytes = 3 * U},
                                          {.kind = TraceEvent::Kind::alloc, .id = 1, .bytes = 1}},
                               *allocator);
  EXPECT_EQ(bytes_of(r.figures.peak_load_by_role, Role::activation), 4 * U) << "1 byte rounds up to a granule";
  EXPECT_EQ(r.figures.peak_load_bytes, 4 * U);
}

}  // namespace
}  // namespace tidepool
