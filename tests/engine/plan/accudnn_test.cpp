// AccUDNN's memory optimizer and tuner on sequences small enough to work
// out by hand: Algorithm 1's t_ready, constraint (6), the choice of maps
// to pin, Algorithm 2's batch search and eq. 9's learning rate.
#include "engine/plan/accudnn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace tidepool {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// Three layers forward and three backward, 10 µs each; sizes in bytes.
//
//   j  layer  places                           releases when it finishes
//   0  F0     x, a0 (the two maps, 100 each)   -
//   1  F1     a1 100                           -
//   2  F2     a2 20 (the logits)               -
//   3  B2     da1 20                           a1, a2: 120
//   4  B1     da0 20 + workspace 100           workspace, da1: 120; and a0
//   5  B0     -                                da0: 20; and x
//
// x (F0's input) is last read forward by F0 and first read backward by B0;
// a0 (F0's output) by F1 and B1. Each moves in 5 µs either way. Offloaded,
// x leaves at F0's finish, 10..15, and a0 at F1's, 20..25, each releasing
// its 100 bytes when its copy completes; fetched back, each is placed again
// with the layer that reads it.
AccProblem three_layer_net(std::size_t budget) {
  AccProblem p;
  p.layers = {{"F0", 10, 0, 0},    {"F1", 10, 100, 0},  {"F2", 10, 20, 0},
              {"B2", 10, 20, 120}, {"B1", 10, 120, 120}, {"B0", 10, 0, 20}};
  p.maps = {{.name = "x", .bytes = 100, .produced_by = 0, .offload_after = 0, .needed_by = 5, .offload_us = 5,
             .prefetch_us = 5},
            {.name = "a0", .bytes = 100, .produced_by = 0, .offload_after = 1, .needed_by = 4, .offload_us = 5,
             .prefetch_us = 5}};
  p.budget_bytes = budget;
  return p;
}

constexpr std::size_t kX = 0, kA0 = 1;

void expect_times(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t j = 0; j < want.size(); ++j) EXPECT_DOUBLE_EQ(got[j], want[j]) << what << "[" << j << "]";
}

// Memory to spare: the swap-in stream places every layer at 0 µs and only
// the transfers set t_ready. B1's a0 can come back once its offload has
// completed (25) and is in at 30; B0's x follows straight after, at 35: the
// prefetch times accumulate. Nothing stalls (30 <= 40, 35 <= 50).
// Everything placed at once holds 200 + 100 + 20 + 20 + 220 = 560.
TEST(AccUdnn, ReadyTimesWithMemoryToSpareAccumulateThePrefetches) {
  const AccTimeline t = ready_times(three_layer_net(1000), {});
  ASSERT_TRUE(t.fits);
  expect_times(t.ready_us, {0, 0, 0, 0, 30, 35}, "ready");
  expect_times(t.start_us, {0, 10, 20, 30, 40, 50}, "start");
  expect_times(t.stall_us, {0, 0, 0, 0, 0, 0}, "stall");
  EXPECT_DOUBLE_EQ(t.iteration_us, 60);
  EXPECT_DOUBLE_EQ(t.total_stall_us, 0);
  EXPECT_EQ(t.peak_bytes, 560u);
}

// Ours: a prefetch the executor issues only once B2 has finished (its
// schedule's lookahead) cannot start at 25 as the swap-in stream would
// like: a0 is in at 40 + 5 = 45, and B1 stalls the 5 µs; x follows at 50.
TEST(AccUdnn, APrefetchIssuedAfterALayerStartsWhenThatLayerFinishes) {
  AccProblem p = three_layer_net(1000);
  p.maps[kA0].fetch_after = 3;
  const AccTimeline t = ready_times(p, {});
  expect_times(t.ready_us, {0, 0, 0, 0, 45, 50}, "ready");
  expect_times(t.stall_us, {0, 0, 0, 0, 5, 0}, "stall");
  p.maps[kA0].fetch_after = 4;  // not before the layer that needs it
  EXPECT_THROW(ready_times(p, {}), std::invalid_argument);
}

// Budget 340: F0..B2 fit at 0 µs (200 + 100 + 20 + 20). B1 needs 220 and
// may hold 340: the held 340 must fall to 120. x's offload (15) and a0's
// (25) bring it to 140, not enough; B2's finish at 40 frees 120. So
// j_current = B2 and j_satisfied = B2, and, as the paper writes it,
// t_ready[B1] = Σ t up to B2 + t_pre(a0) = 40 + 5 = 45: B1 stalls 5 µs.
// B0 is then placed at once (20 + 220 + 100 = 340) and its x is in at 50,
// before B1 finishes at 55.
TEST(AccUdnn, ATightBudgetMakesAPrefetchWaitForARelease) {
  const AccTimeline t = ready_times(three_layer_net(340), {});
  ASSERT_TRUE(t.fits);
  expect_times(t.ready_us, {0, 0, 0, 0, 45, 50}, "ready");
  expect_times(t.start_us, {0, 10, 20, 30, 45, 55}, "start");
  expect_times(t.stall_us, {0, 0, 0, 0, 5, 0}, "stall");
  EXPECT_DOUBLE_EQ(t.iteration_us, 65);
  EXPECT_DOUBLE_EQ(t.total_stall_us, 5);
  EXPECT_EQ(t.peak_bytes, 340u);
}

// The least any layer can hold is B1's: after B2 has finished only da1 (20)
// is left, and B1 places 220, so 240 is the smallest budget that fits.
// Under 239: F1 waits for x's offload (ready 15, a 5 µs stall: F1 runs
// 15..25, so a0 leaves 25..30); F2 fits at once; B2 waits for a0's offload
// (ready 30: on the delayed timeline, where the paper's plain Σ t would
// have had a0 gone at 25); B1 would need the held 140 to fall to 19, and
// after B2's finish only da1's 20 is left: t_ready is +infinity from B1 on.
TEST(AccUdnn, ABudgetTooSmallForALayerDoesNotFit) {
  EXPECT_TRUE(ready_times(three_layer_net(240), {}).fits);
  const AccTimeline t = ready_times(three_layer_net(239), {});
  EXPECT_FALSE(t.fits);
  EXPECT_EQ(t.unfit_layer, 4);
  expect_times(t.ready_us, {0, 15, 15, 30, kNever, kNever}, "ready");
  EXPECT_DOUBLE_EQ(t.stall_us[1], 5);
  EXPECT_EQ(t.iteration_us, kNever);
  EXPECT_EQ(t.total_stall_us, kNever);
  EXPECT_FALSE(choose_pinned(three_layer_net(239)).feasible);
  EXPECT_EQ(choose_pinned(three_layer_net(239)).unresolved_layer, 4);
  // Under 200, F0's own allocation is over the budget.
  EXPECT_EQ(ready_times(three_layer_net(199), {}).unfit_layer, 0);
}

// Constraint (6): with memory to spare and a0 fetched back in 20 µs, B1 is
// ready at 25 + 20 = 45 > Σ t before it = 40, a 5 µs stall that delays B0
// too (ready at 50, started at 55). Pinning a0 (the map B1 fetches) takes
// away its transfers: B1 is ready at 0 and B0's x is in at 15 + 5 = 20.
TEST(AccUdnn, PinningTheMapOfAStalledLayerRemovesTheStall) {
  AccProblem p = three_layer_net(1000);
  p.maps[kA0].prefetch_us = 20;
  const AccTimeline offloaded = ready_times(p, {});
  EXPECT_DOUBLE_EQ(offloaded.ready_us[4], 45);
  EXPECT_GT(offloaded.ready_us[4], 40) << "constraint (6) broken at B1";
  expect_times(offloaded.stall_us, {0, 0, 0, 0, 5, 0}, "stall");
  EXPECT_DOUBLE_EQ(offloaded.iteration_us, 65);

  const AccTimeline pinned = ready_times(p, {false, true});
  expect_times(pinned.ready_us, {0, 0, 0, 0, 0, 20}, "ready with a0 pinned");
  EXPECT_DOUBLE_EQ(pinned.total_stall_us, 0);
  EXPECT_DOUBLE_EQ(pinned.iteration_us, 60);

  const AccChoice c = choose_pinned(p);
  EXPECT_TRUE(c.feasible);
  EXPECT_EQ(c.pinned, (std::vector<bool>{false, true}));
  EXPECT_EQ(c.pinned_bytes, 100u);
  EXPECT_EQ(c.offloaded_bytes, 100u);
  EXPECT_DOUBLE_EQ(c.timeline.iteration_us, 60);
  EXPECT_EQ(c.unresolved_layer, -1);
}

TEST(AccUdnn, NothingIsPinnedWhereNothingStalls) {
  const AccChoice c = choose_pinned(three_layer_net(1000));
  EXPECT_TRUE(c.feasible);
  EXPECT_EQ(c.pinned, (std::vector<bool>{false, false}));
  EXPECT_EQ(c.pinned_bytes, 0u);
  EXPECT_EQ(c.offloaded_bytes, 200u);
}

// Budget 340 (the tight test above): pinning a0 means B1 places 120, which
// fits once B2 has finished at 40, the moment B1 may start. No stall.
TEST(AccUdnn, UnderATightBudgetPinningStillFitsWhereThereIsRoom) {
  const AccChoice c = choose_pinned(three_layer_net(340));
  EXPECT_TRUE(c.feasible);
  EXPECT_EQ(c.pinned, (std::vector<bool>{false, true}));
  expect_times(c.timeline.ready_us, {0, 0, 0, 0, 40, 45}, "ready");
  EXPECT_DOUBLE_EQ(c.timeline.total_stall_us, 0);
  EXPECT_EQ(c.timeline.peak_bytes, 340u);
}

// Budget 300, everything offloaded: F2 waits for x's offload (15, before
// F1 ends at 20: no stall), B1 for B2's finish (ready 45, stall 5), B0 for
// B1's at 55 (ready 60, stall 5). The stalls tie; B1's comes first: pinning
// a0 makes B1 ready at 40 and B0 at 50 + 5 = 55 after B1's finish at 50,
// still a 5 µs stall. B0's own map is x, and pinning x too leaves F2
// nothing to wait for: 300 held, 20 more to place, no release coming.
// Pinning x alone stalls F2 instead (it waits for a0's offload, 25 > 20).
// So no choice works at 300.
TEST(AccUdnn, WithNoSpareMemoryPinningIsInfeasible) {
  const AccProblem p = three_layer_net(300);
  const AccTimeline offloaded = ready_times(p, {});
  expect_times(offloaded.ready_us, {0, 0, 15, 15, 45, 60}, "ready");
  expect_times(offloaded.stall_us, {0, 0, 0, 0, 5, 5}, "stall");
  EXPECT_FALSE(ready_times(p, {true, true}).fits);
  EXPECT_EQ(ready_times(p, {true, true}).unfit_layer, 2);
  EXPECT_DOUBLE_EQ(ready_times(p, {true, false}).stall_us[2], 5);

  const AccChoice c = choose_pinned(p);
  EXPECT_FALSE(c.feasible);
  EXPECT_EQ(c.unresolved_layer, 5);
  EXPECT_EQ(c.pinned, (std::vector<bool>{false, true})) << "a0 helped and stays pinned";
  expect_times(c.timeline.stall_us, {0, 0, 0, 0, 0, 5}, "stall with a0 pinned");
  EXPECT_DOUBLE_EQ(c.timeline.iteration_us, 65);
  EXPECT_EQ(c.pinned_bytes, 100u);

  // The paper's tolerance: a stall of 5 in 60 µs is over 0.5% but under 10%.
  EXPECT_TRUE(choose_pinned(p, 0.1).feasible);
}

// A map offloaded just before it is needed (F2's input, read again by B2)
// cannot come back before its offload has completed: everything offloaded
// stalls B2, however much memory there is, and AccUDNN pins it.
TEST(AccUdnn, AMapIsFetchedBackOnlyAfterItsOffload) {
  AccProblem p = three_layer_net(1000);
  p.layers[1].alloc_bytes = 0;  // a1 becomes a map
  p.layers[3].release_bytes = 20;
  p.maps.push_back({.name = "a1", .bytes = 100, .produced_by = 1, .offload_after = 2, .needed_by = 3,
                    .offload_us = 5, .prefetch_us = 5});
  const AccTimeline t = ready_times(p, {});
  // a1 leaves 30..35 and is back at 40; B2 could have started at 30.
  EXPECT_DOUBLE_EQ(t.ready_us[3], 40);
  EXPECT_DOUBLE_EQ(t.stall_us[3], 10);
  const AccChoice c = choose_pinned(p);
  EXPECT_TRUE(c.feasible);
  EXPECT_EQ(c.pinned, (std::vector<bool>{false, false, true}));
}

// A layer whose block the pool placed over bytes an offload still reads
// waits for that copy: x leaves 10..15 in three_layer_net; with a 20 µs
// copy it is done at 30, so F2 (due at 20) starts at 30, a 10 µs stall
// that delays everything after it. A pinned x is never copied: no wait.
TEST(AccUdnn, ALayerPlacedOverAnOffloadsBytesWaitsForItsCopy) {
  AccProblem p = three_layer_net(1000);
  p.maps[kX].offload_us = 20;
  p.layers[2].waits_for_offloads = {static_cast<int>(kX)};
  const AccTimeline t = ready_times(p, {});
  EXPECT_DOUBLE_EQ(t.start_us[2], 30);
  EXPECT_DOUBLE_EQ(t.stall_us[2], 10);
  EXPECT_DOUBLE_EQ(t.iteration_us, 70);
  const AccTimeline pinned = ready_times(p, {true, false});
  EXPECT_DOUBLE_EQ(pinned.start_us[2], 20);
  EXPECT_DOUBLE_EQ(pinned.stall_us[2], 0);
}

// A map whose block stayed parked until backward placed it again is
// taken back as it was: a0 is offloaded (its copy still runs on the
// swap-out stream) but never fetched, so B1 is ready at once and x's
// prefetch for B0 starts as soon as x's offload is done (15 + 5 = 20).
TEST(AccUdnn, AReclaimedMapIsNeverFetched) {
  AccProblem p = three_layer_net(1000);
  p.maps[kA0].reclaimed = true;
  const AccTimeline t = ready_times(p, {});
  expect_times(t.ready_us, {0, 0, 0, 0, 0, 20}, "ready");
  EXPECT_DOUBLE_EQ(t.iteration_us, 60);
}

TEST(AccUdnn, ProblemsThatMeanNothingAreRefused) {
  AccProblem p = three_layer_net(1000);
  EXPECT_THROW(ready_times(p, {true}), std::invalid_argument) << "one flag per map";
  p.maps[kX].needed_by = 0;
  try {
    ready_times(p, {});
    ADD_FAILURE() << "a map needed before its offload is refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("feature map x"), std::string::npos) << e.what();
  }
  p = three_layer_net(1000);
  p.maps[kA0].freed_after = 6;
  EXPECT_THROW(ready_times(p, {}), std::invalid_argument) << "past the last layer";
  p = three_layer_net(1000);
  p.layers[3].release_bytes = 1000;
  EXPECT_THROW(ready_times(p, {}), std::invalid_argument) << "releases more than placed";
  p = three_layer_net(1000);
  p.layers[2].compute_us = -1;
  EXPECT_THROW(ready_times(p, {}), std::invalid_argument);
  p = three_layer_net(1000);
  p.layers[1].waits_for_offloads = {static_cast<int>(kA0)};
  EXPECT_THROW(ready_times(p, {}), std::invalid_argument) << "a0's copy starts after F1: F1 cannot wait for it";
  p.layers[1].waits_for_offloads = {7};
  EXPECT_THROW(ready_times(p, {}), std::invalid_argument) << "no such map";
  EXPECT_THROW(ready_times(AccProblem{}, {}), std::invalid_argument) << "no layers";
  EXPECT_THROW(choose_pinned(three_layer_net(1000), -0.1), std::invalid_argument);
}

// Algorithm 2 on a family in the batch k, budget 1000 bytes:
//   six layers F0 F1 F2 B2 B1 B0 of 10 + k µs each (a fixed overhead, so
//   images/s = k / (6 (10 + k)) µs rises and saturates at 1/6 per µs);
//   one map x of 10k bytes, F0's input read again by B0, moving in 3k µs
//   either way; B2 places a 10k workspace and frees it when it finishes.
// Everything offloaded fits up to k_max = 100 (10k <= 1000). Up to k = 33
// the swap-in stream places everything at 0; above, B0's room waits for
// x's offload; either way x is back at (10 + k) + 3k + 3k = 10 + 7k while
// B1 finishes at 5 (10 + k) = 50 + 5k: no stall for k <= 20. Above 20, pin
// x: it then holds 10k beside B2's 10k, which fits for k <= 50. Above 50
// B2 itself has to wait for x's offload (a stall of k - 20) and pinning x
// does not fit. So k* = 50, with x pinned.
std::optional<AccProblem> family(std::int64_t k) {
  if (k > 100) return std::nullopt;
  const double t = 10 + static_cast<double>(k);
  const std::size_t bytes = 10 * static_cast<std::size_t>(k);
  AccProblem p;
  p.layers = {{"F0", t}, {"F1", t}, {"F2", t}, {"B2", t, bytes, bytes}, {"B1", t}, {"B0", t}};
  p.maps = {{.name = "x", .bytes = bytes, .produced_by = 0, .offload_after = 0, .needed_by = 5,
             .offload_us = 3.0 * static_cast<double>(k), .prefetch_us = 3.0 * static_cast<double>(k)}};
  p.budget_bytes = 1000;
  return p;
}

TEST(AccUdnn, TheFamilysChoicesAreTheHandWorkedOnes) {
  double previous = 0;
  for (std::int64_t k = 1; k <= 100; ++k) {
    SCOPED_TRACE("k " + std::to_string(k));
    const AccChoice c = choose_pinned(*family(k));
    EXPECT_EQ(c.feasible, k <= 50);
    if (k > 50) continue;
    EXPECT_EQ(c.pinned_bytes, k <= 20 ? 0u : 10u * static_cast<std::size_t>(k));
    EXPECT_DOUBLE_EQ(c.timeline.iteration_us, 6.0 * (10 + static_cast<double>(k)));
    const double images_per_us = static_cast<double>(k) / c.timeline.iteration_us;
    EXPECT_GT(images_per_us, previous) << "throughput rises with k";
    EXPECT_LT(images_per_us, 1.0 / 6);
    previous = images_per_us;
  }
  // Just above 50: the stall B2's wait for x's offload causes, k - 20.
  EXPECT_DOUBLE_EQ(ready_times(*family(51), {}).stall_us[3], 31);
}

TEST(AccUdnn, TheEfficiencyOptimalBatchIsTheLargestWithoutStalls) {
  const AccBatchSearch s = efficiency_optimal_batch(family, 104);
  ASSERT_TRUE(s.batch.has_value());
  EXPECT_EQ(*s.batch, 50);
  EXPECT_TRUE(s.choice.feasible);
  EXPECT_EQ(s.choice.pinned, std::vector<bool>{true});
  // The paper's scan: every batch from k_max down to k*, largest first.
  ASSERT_EQ(s.table.size(), 55u);
  for (std::size_t i = 0; i < s.table.size(); ++i) {
    const AccBatchRow& row = s.table[i];
    EXPECT_EQ(row.batch, 104 - static_cast<std::int64_t>(i));
    EXPECT_EQ(row.trainable, row.batch <= 100) << row.batch;
    EXPECT_EQ(row.stall_free, row.batch == 50) << row.batch;
    if (!row.trainable) {
      EXPECT_EQ(row.images_per_s, 0);
      EXPECT_EQ(row.iteration_us, kNever);
    } else if (row.batch > 50) {
      // B2 stalls k - 20 and B0 2k - 10, x offloaded (pinning it does not fit).
      EXPECT_DOUBLE_EQ(row.stall_us, 3.0 * static_cast<double>(row.batch) - 30) << row.batch;
      EXPECT_EQ(row.pinned_bytes, 0u);
    }
  }
  const AccBatchRow& best = s.table.back();
  EXPECT_DOUBLE_EQ(best.iteration_us, 360);
  EXPECT_DOUBLE_EQ(best.images_per_s, 50e6 / 360);
  EXPECT_EQ(best.pinned_bytes, 500u);
  EXPECT_EQ(best.offloaded_bytes, 0u);
}

// Stall-freedom is monotone in k here, so scanning by any step and then
// bisecting finds the step-1 scan's k*, in fewer evaluations.
TEST(AccUdnn, ACoarseScanFindsTheSameBatch) {
  for (std::int64_t step = 1; step <= 120; ++step) {
    const AccBatchSearch s = efficiency_optimal_batch(family, 100, {.step = step});
    ASSERT_TRUE(s.batch.has_value()) << "step " << step;
    EXPECT_EQ(*s.batch, 50) << "step " << step;
    EXPECT_EQ(s.choice.pinned, std::vector<bool>{true}) << "step " << step;
  }
  // Step 7: 100, 93, ..., 51 fail, 44 works; then 47, 49, 50 between 44 and 51.
  const AccBatchSearch s = efficiency_optimal_batch(family, 100, {.step = 7});
  std::vector<std::int64_t> evaluated;
  for (const AccBatchRow& row : s.table) evaluated.push_back(row.batch);
  EXPECT_EQ(evaluated, (std::vector<std::int64_t>{100, 93, 86, 79, 72, 65, 58, 51, 50, 49, 47, 44}));
}

TEST(AccUdnn, TheSearchEndsAtKMaxOrFindsNothing) {
  const AccBatchSearch at_once = efficiency_optimal_batch(family, 40, {.step = 8});
  EXPECT_EQ(at_once.batch, 40);
  EXPECT_EQ(at_once.table.size(), 1u) << "k_max itself works: nothing else to look at";
  const AccBatchSearch none = efficiency_optimal_batch(family, 100, {.step = 10, .min_batch = 60});
  EXPECT_FALSE(none.batch.has_value());
  EXPECT_EQ(none.table.back().batch, 60);
  EXPECT_THROW(efficiency_optimal_batch(family, 100, {.step = 0}), std::invalid_argument);
  EXPECT_THROW(efficiency_optimal_batch(family, 0), std::invalid_argument);
}

TEST(AccUdnn, TheAdaptedLearningRateFollowsEquationNine) {
  EXPECT_NEAR(adapted_learning_rate(0.1, 256, 256, 0.7), 0.1, 1e-14) << "q = 1";
  // q = 2: (1 - (1 - ac)^2) / c = 2a - a²c = 0.2 - 0.007.
  EXPECT_NEAR(adapted_learning_rate(0.1, 128, 256, 0.7), 0.193, 1e-14);
  // c → 0: linear scaling.
  EXPECT_NEAR(adapted_learning_rate(0.1, 256, 1024, 1e-9), 0.4, 1e-9);
  // Between the base rate and linear scaling, lower the larger c.
  double previous = 0.4;
  for (double c : {0.1, 1.0, 5.0, 9.9}) {
    const double lr = adapted_learning_rate(0.1, 256, 1024, c);
    EXPECT_LT(lr, previous) << c;
    EXPECT_GT(lr, 0.1) << c;
    previous = lr;
  }
  // A smaller batch: a smaller rate, between q·a and a.
  const double smaller = adapted_learning_rate(0.1, 256, 64, 0.7);
  EXPECT_GT(smaller, 0.025);
  EXPECT_LT(smaller, 0.1);
}

TEST(AccUdnn, ConvexityRoundTripsThroughEquationNine) {
  // q = 2 solved by hand: c = (2a - lr) / a² = 0.01 / 0.01.
  EXPECT_NEAR(convexity_from(0.1, 2, 0.19), 1.0, 1e-12);
  for (double q : {0.25, 0.5, 2.0, 4.0})
    for (double c : {0.05, 0.7, 3.0}) {
      const double lr = adapted_learning_rate(0.1, 100, static_cast<std::int64_t>(100 * q), c);
      EXPECT_NEAR(convexity_from(0.1, q, lr), c, 1e-9 * c) << "q " << q << " c " << c;
    }
  // The paper's figure: ResNet-101 at 592 with lr 0.22, from lr 0.1 at 256.
  EXPECT_NEAR(convexity_from(0.1, 592.0 / 256, 0.22), kAccudnnConvexity, 5e-4);
  EXPECT_NEAR(adapted_learning_rate(0.1, 256, 592, kAccudnnConvexity), 0.22, 5e-5);
}

TEST(AccUdnn, BadLearningRateInputsAreRefused) {
  EXPECT_THROW(adapted_learning_rate(0.1, 256, 512, 0), std::invalid_argument);
  EXPECT_THROW(adapted_learning_rate(0.1, 256, 512, -1), std::invalid_argument);
  EXPECT_THROW(adapted_learning_rate(0.1, 256, 512, 10), std::invalid_argument) << "a·c = 1";
  EXPECT_THROW(adapted_learning_rate(0.2, 256, 512, 7), std::invalid_argument) << "a·c > 1";
  EXPECT_THROW(adapted_learning_rate(0, 256, 512, 0.7), std::invalid_argument);
  EXPECT_THROW(adapted_learning_rate(0.1, 0, 512, 0.7), std::invalid_argument);
  EXPECT_THROW(adapted_learning_rate(0.1, 256, 0, 0.7), std::invalid_argument);
  try {
    adapted_learning_rate(0.1, 256, 512, 12);
    ADD_FAILURE() << "a·c > 1 is refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("< 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(convexity_from(0.1, 1, 0.1), std::invalid_argument) << "q = 1 fixes no c";
  EXPECT_THROW(convexity_from(0.1, 2, 0.21), std::invalid_argument) << "above linear scaling";
  EXPECT_THROW(convexity_from(0.1, 2, 0.1), std::invalid_argument) << "the base rate needs c = 1/a exactly";
  EXPECT_THROW(convexity_from(0.1, 0.5, 0.2), std::invalid_argument);
  EXPECT_THROW(convexity_from(0.1, 0, 0.05), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
