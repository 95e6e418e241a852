// The teaching scenario's data: the papers' sequences played event by event
// through every heuristic. The figures must agree with the engine's own
// replay and pool-search tests (tests/engine/memory/pool_search_test.cpp,
// allocators_test.cpp), and every frame must be a drawable pool: blocks
// inside it, none over another.
#include "ui/scene/fragmentation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/replay.h"
#include "engine/memory/allocator.h"
#include "engine/memory/paper_sequences.h"

namespace tidepool::ui {
namespace {

constexpr std::size_t U = kAllocGranularity;

// The papers' sequences are a few 256-B units; pytorch claims a 2 MiB
// segment for its first request, so it fails at once in every one of their
// pools (as PyTorch would) and the papers' outcomes are not its to show.
bool at_paper_scale(const std::string& heuristic) { return heuristic != "pytorch"; }

const HeuristicReplay& of(const FragmentationReplay& r, const std::string& heuristic) {
  for (const HeuristicReplay& h : r.heuristics)
    if (h.heuristic == heuristic) return h;
  throw std::out_of_range("no replay for " + heuristic);
}

// Every frame of every heuristic is a pool one could draw: blocks sorted,
// aligned, inside the pool and disjoint, their sizes adding up to the load,
// the largest hole below the extent never more than the room there is.
void expect_drawable(const PaperSequence& s, const FragmentationReplay& r) {
  for (const HeuristicReplay& h : r.heuristics) {
    SCOPED_TRACE(h.heuristic);
    ASSERT_EQ(h.frames.size(), s.trace.size()) << "one frame per event";
    int failures = 0;
    std::set<std::int64_t> unplaced;  // ids whose alloc failed and that are not freed yet
    for (std::size_t i = 0; i < h.frames.size(); ++i) {
      const ReplayFrame& f = h.frames[i];
      const TraceEvent& e = s.trace[i];
      SCOPED_TRACE("event " + std::to_string(i));
      EXPECT_EQ(f.event, static_cast<int>(i));
      std::size_t load = 0;
      for (std::size_t b = 0; b < f.live.size(); ++b) {
        EXPECT_EQ(f.live[b].offset % U, 0u);
        EXPECT_LE(f.live[b].end(), h.pool_bytes);
        if (b > 0) EXPECT_LE(f.live[b - 1].end(), f.live[b].offset) << "blocks overlap";
        load += f.live[b].bytes;
      }
      EXPECT_EQ(f.load_bytes, load);
      EXPECT_LE(f.largest_free_below_extent_bytes, f.extent_bytes > load ? f.extent_bytes - load : 0);
      EXPECT_LE(f.extent_bytes, h.pool_bytes);
      if (e.kind == TraceEvent::Kind::alloc) {
        EXPECT_FALSE(f.skipped);
        EXPECT_EQ(f.failed, !f.placed_offset.has_value());
        if (f.failed) {
          ++failures;
          unplaced.insert(e.id);
          EXPECT_EQ(f.failed_request_bytes, round_up(e.bytes));
          EXPECT_LT(f.largest_free_block_bytes, round_up(e.bytes)) << "it failed for want of a large enough block";
        } else {
          const auto placed = std::find_if(f.live.begin(), f.live.end(),
                                           [&](const ReplayBlock& b) { return b.id == e.id; });
          ASSERT_NE(placed, f.live.end());
          EXPECT_EQ(placed->offset, *f.placed_offset);
          EXPECT_EQ(placed->bytes, round_up(e.bytes));
          EXPECT_EQ(placed->will_offload, e.will_offload);
        }
      } else {
        EXPECT_FALSE(f.failed);
        EXPECT_FALSE(f.placed_offset.has_value());
        EXPECT_EQ(f.skipped, unplaced.erase(e.id) == 1) << "only frees of blocks never placed are skipped";
      }
    }
    EXPECT_EQ(h.failures, failures);
    EXPECT_EQ(h.served(), failures == 0);
  }
}

TEST(Fragmentation, NineVersusElevenBestFitFailsAtTheLastRequest) {
  const PaperSequence s = nine_versus_eleven();
  ASSERT_EQ(s.pool_bytes, 11 * U);
  const FragmentationReplay r = replay_fragmentation(s, allocator_names());
  expect_drawable(s, r);
  ASSERT_EQ(r.heuristics.size(), allocator_names().size());
  EXPECT_EQ(r.event_labels, s.event_labels);

  const HeuristicReplay& best = of(r, "best-fit");
  EXPECT_EQ(best.first_failed_event, 7) << "A5(8)";
  EXPECT_EQ(best.failures, 1);
  EXPECT_EQ(*best.frames[4].placed_offset, 5 * U) << "A4 takes the 2-unit hole D2 left, not the 3-unit tail";
  const ReplayFrame& a5 = best.frames[7];
  EXPECT_TRUE(a5.failed);
  EXPECT_EQ(a5.failed_request_bytes, 8 * U);
  EXPECT_EQ(a5.largest_free_block_bytes, 5 * U) << "10 units free, as 5 + 5";
  EXPECT_EQ(a5.largest_free_below_extent_bytes, 5 * U) << "[0, 5) below A4";
  EXPECT_EQ(a5.extent_bytes, 6 * U);
  EXPECT_EQ(a5.live.size(), 1u);
  EXPECT_EQ(best.peak_load_bytes, 8 * U) << "of the blocks placed: A1 + A2 + A3";
  EXPECT_EQ(best.footprint_bytes, 8 * U);

  // In this pool every heuristic fails at A5 as best fit does: first fit
  // also picks the 2-unit hole (the lowest); cnmem is best fit in its
  // 11-unit initial pool; high-end has nothing to offload; smartpool is
  // still learning; exact places with best fit.
  for (const HeuristicReplay& h : r.heuristics) {
    SCOPED_TRACE(h.heuristic);
    if (!at_paper_scale(h.heuristic)) continue;
    EXPECT_EQ(h.first_failed_event, 7);
    EXPECT_FALSE(h.served());
    EXPECT_EQ(h.frames[7].largest_free_block_bytes, 5 * U);
  }
  const HeuristicReplay& cnmem = of(r, "cnmem");
  EXPECT_EQ(cnmem.start.extent_bytes, 11 * U) << "the initial pool is claimed before the first event";
  EXPECT_EQ(cnmem.footprint_bytes, 11 * U);
  EXPECT_TRUE(cnmem.frames[7].pool_boundaries.empty()) << "one pool";

  // In 9 units best fit serves it: A4 goes into the 1-unit tail.
  PaperSequence nine = s;
  nine.pool_bytes = 9 * U;
  const HeuristicReplay in_nine = replay_fragmentation(nine, {"best-fit"}).heuristics.at(0);
  EXPECT_TRUE(in_nine.served());
  EXPECT_EQ(*in_nine.frames[4].placed_offset, 8 * U);
  EXPECT_EQ(*in_nine.frames[7].placed_offset, 0u);
  EXPECT_EQ(in_nine.footprint_bytes, 9 * U);
  EXPECT_DOUBLE_EQ(in_nine.competitive_ratio, 1.0);
}

TEST(Fragmentation, UnavoidableSequenceEndsAboveItsPeakLoadEverywhere) {
  const PaperSequence s = unavoidable_fragmentation();
  const std::size_t peak = peak_load_bytes(s.trace);
  ASSERT_EQ(peak, 4 * s.unit_bytes);
  const FragmentationReplay r = replay_fragmentation(s, allocator_names());
  expect_drawable(s, r);
  for (const HeuristicReplay& h : r.heuristics) {
    SCOPED_TRACE(h.heuristic);
    if (!at_paper_scale(h.heuristic)) {
      EXPECT_EQ(h.first_failed_event, 0) << "no room for a segment";
      continue;
    }
    EXPECT_TRUE(h.served()) << "the sequence's pool has room for every heuristic";
    EXPECT_EQ(h.peak_load_bytes, peak);
    if (h.heuristic == "exact") {
      EXPECT_EQ(h.footprint_bytes, peak) << "the per-tensor ideal reports the peak load";
      EXPECT_DOUBLE_EQ(h.competitive_ratio, 1.0);
      for (const ReplayFrame& f : h.frames) EXPECT_EQ(f.largest_free_below_extent_bytes, 0u) << "no holes, ideally";
    } else {
      EXPECT_GT(h.footprint_bytes, peak);
      EXPECT_GT(h.competitive_ratio, 1.0);
    }
  }

  // At the peak load itself no heuristic serves it (§III-B); the replay
  // records the failures and plays on, skipping the frees of what failed.
  PaperSequence tight = s;
  tight.pool_bytes = peak;
  tight.cnmem_initial_pool_bytes = peak;
  const FragmentationReplay t = replay_fragmentation(tight, allocator_names());
  expect_drawable(tight, t);
  for (const HeuristicReplay& h : t.heuristics) {
    SCOPED_TRACE(h.heuristic);
    EXPECT_FALSE(h.served());
    EXPECT_GE(h.first_failed_event, 0);
    const bool some_skipped =
        std::any_of(h.frames.begin(), h.frames.end(), [](const ReplayFrame& f) { return f.skipped; });
    EXPECT_TRUE(some_skipped) << "every a_ij is freed later, so a failed one's free is skipped";
  }
}

TEST(Fragmentation, Figure7CnmemClaimsASecondPool) {
  const PaperSequence s = cnmem_figure7();
  const FragmentationReplay r = replay_fragmentation(s, allocator_names());
  expect_drawable(s, r);

  const HeuristicReplay& cnmem = of(r, "cnmem");
  EXPECT_EQ(cnmem.start.extent_bytes, 6 * U);
  EXPECT_TRUE(cnmem.start.live.empty());
  const ReplayFrame& before = cnmem.frames[4];  // after D3
  EXPECT_EQ(before.extent_bytes, 6 * U);
  EXPECT_EQ(before.load_bytes, 2 * U);
  EXPECT_EQ(before.largest_free_below_extent_bytes, 3 * U) << "[0, 1) and [3, 6): 4 units free, 3 together";
  const ReplayFrame& last = cnmem.frames[5];
  EXPECT_EQ(*last.placed_offset, 6 * U) << "a new pool above the first";
  EXPECT_EQ(last.extent_bytes, 10 * U);
  EXPECT_EQ(last.pool_boundaries, std::vector<std::size_t>{6 * U});
  EXPECT_EQ(last.largest_free_below_extent_bytes, 3 * U) << "the first pool's free end stays unused";
  EXPECT_EQ(cnmem.footprint_bytes, 10 * U);
  EXPECT_DOUBLE_EQ(cnmem.competitive_ratio, 10.0 / 6.0);

  const HeuristicReplay& best = of(r, "best-fit");
  EXPECT_EQ(*best.frames[5].placed_offset, 3 * U) << "into the free end, growing the range by one unit";
  EXPECT_EQ(best.footprint_bytes, 7 * U);
  EXPECT_TRUE(best.frames[5].pool_boundaries.empty());
  EXPECT_EQ(of(r, "exact").footprint_bytes, 6 * U);

  // Without the initial pool cnmem grows request by request: a pool per
  // allocation that does not fit, each ending where the next begins.
  PaperSequence small = s;
  small.cnmem_initial_pool_bytes = 0;
  const HeuristicReplay grown = replay_fragmentation(small, {"cnmem"}).heuristics.at(0);
  EXPECT_EQ(grown.start.extent_bytes, 0u);
  EXPECT_EQ(grown.frames[2].pool_boundaries, (std::vector<std::size_t>{1 * U, 3 * U}));
  EXPECT_EQ(grown.frames[2].extent_bytes, 6 * U);
}

TEST(Fragmentation, AgreesWithTheEngineReplayWhenEverythingFits) {
  for (const PaperSequence& s : paper_sequences()) {
    SCOPED_TRACE(s.name);
    const FragmentationReplay r = replay_fragmentation(s, allocator_names());
    for (const HeuristicReplay& h : r.heuristics) {
      SCOPED_TRACE(h.heuristic);
      auto a = h.heuristic == "cnmem" && s.cnmem_initial_pool_bytes
                   ? make_cnmem_allocator(s.pool_bytes, s.cnmem_initial_pool_bytes)
                   : make_allocator(h.heuristic, s.pool_bytes);
      const TraceReplay engine = replay(s.trace, *a);
      EXPECT_EQ(h.served(), engine.fits);
      EXPECT_EQ(h.first_failed_event, engine.failed_event);
      if (engine.fits) {
        EXPECT_EQ(h.footprint_bytes, engine.figures.footprint_bytes);
        EXPECT_EQ(h.peak_load_bytes, engine.figures.peak_load_bytes);
      }
    }
  }
}

TEST(Fragmentation, PaperSequencesAreCompleteForTheView) {
  std::set<std::string> names;
  for (const PaperSequence& s : paper_sequences()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(names.insert(s.name).second) << "names are keys";
    EXPECT_FALSE(s.title.empty());
    EXPECT_GT(s.explanation.size(), 200u) << "a paragraph for students";
    EXPECT_EQ(s.event_labels.size(), s.trace.size());
    EXPECT_NO_THROW(validate(s.trace));
    EXPECT_EQ(s.unit_bytes % U, 0u);
    EXPECT_GE(s.pool_bytes, peak_load_bytes(s.trace));
  }
  EXPECT_EQ(names.size(), 3u);
}

TEST(Fragmentation, RejectsUnknownHeuristicsAndMalformedTraces) {
  EXPECT_THROW(replay_fragmentation(cnmem_figure7(), {"worst-fit"}), std::invalid_argument);
  PaperSequence bad = cnmem_figure7();
  bad.trace.push_back({TraceEvent::Kind::free, 99, 0, false});
  bad.event_labels.push_back("D99");
  EXPECT_THROW(replay_fragmentation(bad, {"best-fit"}), std::invalid_argument);
  const FragmentationReplay none = replay_fragmentation(cnmem_figure7(), {});
  EXPECT_TRUE(none.heuristics.empty());
}

// Random sequences in pools too small for some of them, offloaded blocks
// included (high-end places those at the top): every heuristic's every
// frame stays drawable, failures and skipped frees included.
TEST(Fragmentation, RandomSequencesNeverOverlapInAnyHeuristic) {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    PaperSequence s;
    s.name = "random";
    std::vector<std::int64_t> live;
    std::int64_t next_id = 0;
    const int events = std::uniform_int_distribution<int>(5, 60)(rng);
    for (int i = 0; i < events; ++i) {
      const bool free = !live.empty() && std::uniform_int_distribution<int>(0, 2)(rng) == 0;
      if (free) {
        const std::size_t k = std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng);
        s.trace.push_back({TraceEvent::Kind::free, live[k], 0, false});
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        s.event_labels.push_back("free");
      } else {
        // Sizes off the granularity too, so rounding is exercised.
        const std::size_t bytes = std::uniform_int_distribution<std::size_t>(1, 8 * U)(rng);
        const bool offload = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
        s.trace.push_back({TraceEvent::Kind::alloc, next_id, bytes, offload});
        live.push_back(next_id++);
        s.event_labels.push_back("alloc");
      }
    }
    const std::size_t peak = peak_load_bytes(s.trace);
    // From 70% of the peak (failures certain) to 150% (most fit).
    s.pool_bytes = round_up(peak * std::uniform_int_distribution<std::size_t>(70, 150)(rng) / 100);
    s.cnmem_initial_pool_bytes = round % 2 ? s.pool_bytes / 2 : 0;
    const FragmentationReplay r = replay_fragmentation(s, allocator_names());
    expect_drawable(s, r);
    for (const HeuristicReplay& h : r.heuristics) {
      EXPECT_LE(h.footprint_bytes, s.pool_bytes);
      for (const ReplayFrame& f : h.frames)
        for (std::size_t b : f.pool_boundaries) EXPECT_LT(b, f.extent_bytes);
    }
  }
}

}  // namespace
}  // namespace tidepool::ui
