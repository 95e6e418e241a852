// The scenes the views and the --batch pictures draw, built from the events
// of real training iterations on the cpu device.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/device/cpu/cpu_device.h"
#include "engine/observe/sinks/ring_sink.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/picture_scenes.h"
#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/stats.h"
#include "ui/scene/timeline.h"

namespace tidepool::ui {
namespace {

using testing::Batch;
using testing::random_batch;

struct TrainedRun {
  RingSnapshot events;
  std::vector<IterationResult> results;
  std::size_t pool_bytes = 0;
  std::size_t pinned_bytes = 0;
};

TrainedRun train(MemorySettings memory, int iterations, const std::string& heuristic = "best-fit", double link_gbps = 0,
                 std::size_t budget_bytes = 0) {
  const Network net = testing::residual_net();
  CpuDevice device({link_gbps});
  RingSink ring;
  memory.heuristic = heuristic;
  memory.budget_bytes = budget_bytes;
  Trainer trainer(device, net, {.batch = 8, .memory = memory, .seed = 3}, &ring);
  TrainedRun run;
  for (int i = 0; i < iterations; ++i) {
    const Batch b = random_batch(8, 7 + static_cast<unsigned>(i));
    run.results.push_back(trainer.train_step(b.images.data(), b.labels.data()));
  }
  run.events = ring.snapshot();
  run.pool_bytes = trainer.memory().pool_bytes;
  run.pinned_bytes = trainer.train_schedule().pinned_bytes;
  return run;
}

TEST(TimelineScene, KeepsTheLastIterationsWithTransfersOnTheirLanes) {
  const TrainedRun run = train({.mode = OffloadMode::all}, 4);
  const TimelineScene t = build_timeline(run.events, 2);
  ASSERT_EQ(t.iterations.size(), 2u);
  EXPECT_EQ(t.iterations[0].iteration, 2);
  EXPECT_EQ(t.iterations[1].iteration, 3);
  int per_lane[kStreamCount] = {};
  for (const TimelineSpan& s : t.spans) {
    EXPECT_GE(s.iteration, 2);
    EXPECT_LE(t.start_us, s.start_us);
    EXPECT_GE(t.end_us, s.end_us);
    ++per_lane[static_cast<int>(s.lane)];
    if (s.kind == SpanKind::offload) EXPECT_EQ(s.lane, Stream::offload);
    if (s.kind == SpanKind::prefetch) EXPECT_EQ(s.lane, Stream::prefetch);
  }
  EXPECT_GT(per_lane[0], 10);
  EXPECT_GT(per_lane[1], 0) << "mode all offloads";
  EXPECT_GT(per_lane[2], 0) << "and prefetches";
  EXPECT_TRUE(std::is_sorted(t.spans.begin(), t.spans.end(),
                             [](const TimelineSpan& a, const TimelineSpan& b) { return a.start_us < b.start_us; }));
  EXPECT_TRUE(build_timeline(RingSnapshot{}, 2).empty());
}

// In mode all an offloaded tensor comes back by a prefetch (or, its block
// still parked, by none): hovering its offload finds that prefetch in the
// same iteration, and the prefetch its offload;
// the batch's upload at the iteration's start (a prefetch of "data" before
// "data" is offloaded) is no part of that round trip.
TEST(TimelineScene, AnOffloadsRoundTripIsItsPrefetchInTheSameIteration) {
  const TrainedRun run = train({.mode = OffloadMode::all}, 3);
  const TimelineScene t = build_timeline(run.events, 2);
  int offloads = 0;
  for (const TimelineSpan& s : t.spans) {
    const std::vector<const TimelineSpan*> others = t.round_trip(s);
    if (s.kind != SpanKind::offload) {
      if (s.kind != SpanKind::prefetch) EXPECT_TRUE(others.empty()) << s.label();
      if (s.kind == SpanKind::prefetch && !others.empty()) EXPECT_GE(s.start_us, others[0]->start_us) << s.label();
      continue;
    }
    ASSERT_LE(others.size(), 1u) << s.label();
    if (others.empty()) continue;  // its block stayed parked until backward took it back: no copy
    ++offloads;
    EXPECT_EQ(others[0]->kind, SpanKind::prefetch);
    EXPECT_EQ(others[0]->tensor, s.tensor);
    EXPECT_EQ(others[0]->iteration, s.iteration);
    EXPECT_GE(others[0]->start_us, s.end_us) << "back only after it left";
    ASSERT_EQ(t.round_trip(*others[0]).size(), 1u);
    EXPECT_EQ(t.round_trip(*others[0])[0], &s);
  }
  EXPECT_GT(offloads, 0) << "no offload came back by a prefetch: the test shows nothing";
}

// address_map_scene(): at the peak (step 5) the weights (256 KiB at 0),
// the activation (256 KiB at 256 KiB) and the gradient (128 KiB) are
// alive; the workspace comes at step 7.
TEST(AddressMapScene, TheLargestAtThePeakFindingAndABlocksDetails) {
  const AddressMapScene map = testing::address_map_scene();
  const std::vector<const MapBlock*> largest = largest_at_peak(map, 10);
  ASSERT_EQ(largest.size(), 3u);
  EXPECT_EQ(largest[0]->role, Role::weight) << "as large as the activation, and lower";
  EXPECT_EQ(largest[1]->role, Role::activation);
  EXPECT_EQ(largest[2]->role, Role::activation_gradient);
  EXPECT_EQ(largest_at_peak(map, 1).size(), 1u);

  const MapBlock& activation = map.blocks[1];
  EXPECT_TRUE(name_matches(activation, "activation"));
  EXPECT_TRUE(name_matches(activation, "TIVAT")) << "either case";
  EXPECT_FALSE(name_matches(activation, "weight"));
  EXPECT_FALSE(name_matches(activation, "")) << "an empty search finds nothing";

  const std::vector<std::string> details = block_details(activation);
  ASSERT_FALSE(details.empty());
  EXPECT_EQ(details.front(), activation.name);
  auto has = [&](const std::string& line) { return std::find(details.begin(), details.end(), line) != details.end(); };
  EXPECT_TRUE(has("lifetime  steps 1 to 6"));
  EXPECT_TRUE(has("offloaded from step 4"));
  EXPECT_TRUE(has("size      256 KiB"));
}

TEST(TimelineScene, CountsComputeStallsPerIteration) {
  // A slow link under sync transfers makes the compute stream wait.
  const TrainedRun run = train({.mode = OffloadMode::all, .transfer = TransferMode::sync}, 2, "best-fit", 0.05);
  const auto stalls = iteration_stalls(run.events);
  ASSERT_EQ(stalls.size(), 2u);
  const TimelineScene t = build_timeline(run.events, 1);
  double waited = 0;
  for (const TimelineSpan& s : t.spans)
    if (s.stall()) waited += s.duration_us();
  EXPECT_GT(waited, 0.0);
  EXPECT_DOUBLE_EQ(t.iterations.back().stall_us, waited);
  EXPECT_DOUBLE_EQ(stalls.back().stall_us, waited);
}

// No two blocks share an address at the same step.
void expect_no_overlap(const AddressMapScene& map) {
  for (std::size_t i = 0; i < map.blocks.size(); ++i)
    for (std::size_t j = i + 1; j < map.blocks.size(); ++j) {
      const MapBlock &a = map.blocks[i], &b = map.blocks[j];
      const bool same_time = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool same_space = a.offset < b.end() && b.offset < a.end();
      // A block freed at a step may be reused by one placed at that step.
      const bool handover = a.last_step == b.first_step || b.last_step == a.first_step;
      EXPECT_FALSE(same_time && same_space && !handover) << a.name << " overlaps " << b.name;
    }
}

TEST(AddressMapScene, MatchesWhatTheIterationReported) {
  for (OffloadMode mode : {OffloadMode::base, OffloadMode::all}) {
    for (const char* heuristic : {"best-fit", "high-end", "cnmem"}) {
      SCOPED_TRACE(std::string(to_string(mode)) + " " + heuristic);
      const TrainedRun run = train({.mode = mode}, 3, heuristic);
      const AddressMapScene map = build_address_map(run.events, run.pool_bytes);
      ASSERT_EQ(map.iteration, 2);
      EXPECT_EQ(map.peak_load_bytes, run.results.back().memory.peak_load_bytes);
      EXPECT_EQ(map.footprint_bytes, run.results.back().memory.footprint_bytes);
      EXPECT_GT(map.steps, 10);
      const auto weights = std::count_if(map.blocks.begin(), map.blocks.end(), [](const MapBlock& b) {
        return b.persistent && b.role == Role::weight;
      });
      EXPECT_GT(weights, 0) << "the set-up placement is on the map";
      for (const MapBlock& b : map.blocks) {
        EXPECT_LE(b.end(), run.pool_bytes) << b.name;
        EXPECT_LE(b.first_step, b.last_step) << b.name;
      }
      expect_no_overlap(map);
      // The holes at the peak are what the extent then holds beyond the load.
      std::size_t holes = 0;
      for (const MapHole& h : map.holes_at_peak) holes += h.bytes;
      EXPECT_LE(holes, map.footprint_bytes - std::min(map.footprint_bytes, map.peak_load_bytes) + 1);
      if (map.largest_free_at_peak) EXPECT_LE(map.largest_free_at_peak->bytes, holes);
      // The figures are the iteration's own, as the replay loop reported them.
      const IterationSummary& last = run.events.iterations.back();
      EXPECT_EQ(map.peak_step, last.peak_step);
      EXPECT_EQ(map.after_step.at(static_cast<std::size_t>(map.peak_step)).load_bytes, map.peak_load_bytes);
      if (mode == OffloadMode::all) {
        const auto moved = std::count_if(map.blocks.begin(), map.blocks.end(), [](const MapBlock& b) {
          return b.offload_step >= 0 || b.prefetch_done_step >= 0;
        });
        EXPECT_GT(moved, 0) << "transfers are marked on their blocks";
      }
    }
  }
}

TEST(AddressMapScene, SkipsAnIterationWhoseEventsWereOverwritten) {
  const Network net = testing::residual_net();
  CpuDevice device;
  RingSink ring(RingCapacities{.spans = 1 << 12, .allocs = 40, .loads = 1 << 12, .iterations = 16});
  Trainer trainer(device, net, {.batch = 8, .seed = 3}, &ring);
  const Batch b = random_batch(8, 1);
  trainer.train_step(b.images.data(), b.labels.data());
  trainer.train_step(b.images.data(), b.labels.data());
  const RingSnapshot s = ring.snapshot();
  ASSERT_GT(s.dropped_allocs, 0u);
  EXPECT_TRUE(build_address_map(s, trainer.memory().pool_bytes).empty())
      << "40 events hold less than one iteration: no map rather than a wrong one";
  EXPECT_FALSE(s.placement.empty()) << "the set-up placement is kept apart from the ring";
}

TEST(RingSink, KeepsTheCurrentPlacementAndReplacesItOnANewPool) {
  const Network net = testing::residual_net();
  CpuDevice device;
  RingSink ring;
  Trainer trainer(device, net, {.batch = 8, .seed = 3, .room_to_grow = true}, &ring);
  const Batch b = random_batch(8, 1);
  trainer.train_step(b.images.data(), b.labels.data());
  const std::size_t first = ring.snapshot().placement.size();
  ASSERT_GT(first, 0u);
  const std::uint64_t version = ring.version();
  MemorySettings other = trainer.memory().settings;
  other.heuristic = "first-fit";
  trainer.apply(other);  // a new heuristic: a new pool
  trainer.train_step(b.images.data(), b.labels.data());
  EXPECT_GT(ring.version(), version);
  const RingSnapshot s = ring.snapshot();
  EXPECT_EQ(s.placement.size(), first) << "the old placement was replaced, not appended to";
  for (const AllocEvent& e : s.placement) EXPECT_EQ(e.iteration, -1);
}

TEST(MemoryLoadScene, FollowsTheSamplesAndMarksThePeak) {
  const TrainedRun run = train({.mode = OffloadMode::conv}, 4);
  const MemoryLoadScene m = build_memory_load(run.events, run.pool_bytes, 2, 8);
  ASSERT_FALSE(m.points.empty());
  EXPECT_EQ(m.points.front().iteration, 2);
  EXPECT_EQ(m.points.back().iteration, 3);
  std::size_t peak = 0;
  for (const LoadPoint& p : m.points) {
    peak = std::max(peak, p.load_bytes);
    EXPECT_LE(p.load_bytes, p.extent_bytes);
  }
  EXPECT_EQ(m.peak_load_bytes, peak);
  EXPECT_EQ(m.points[m.peak_index].load_bytes, peak);
  EXPECT_EQ(m.peak_load_bytes, std::max(run.results[2].memory.peak_load_bytes, run.results[3].memory.peak_load_bytes));
  ASSERT_EQ(m.iterations.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m.iterations[i].loss, run.results[i].loss);
    EXPECT_GT(m.iterations[i].images_per_second, 0.0);
  }
}

TEST(StatsScene, FiguresOfTheLastIteration) {
  // Sync: every offloaded tensor comes back by copy (async ones whose
  // blocks are still parked come back without one).
  const TrainedRun run = train({.mode = OffloadMode::all, .transfer = TransferMode::sync}, 2);
  const TimelineScene t = build_timeline(run.events, 1);
  const IterationStats s = build_stats(run.events, t, run.pinned_bytes);
  EXPECT_EQ(s.iteration, 1);
  EXPECT_EQ(s.largest_free_at_peak_bytes, run.results[1].memory.largest_free_at_peak.bytes);
  EXPECT_EQ(s.peak_load_bytes, run.results[1].memory.peak_load_bytes);
  EXPECT_EQ(s.footprint_bytes, run.results[1].memory.footprint_bytes);
  EXPECT_EQ(s.pinned_host_bytes, run.pinned_bytes);
  EXPECT_GT(s.offloaded_bytes, 0.0);
  // What leaves comes back; the batch's upload (images and labels) travels
  // on the prefetch stream too, and is counted apart.
  const double batch_upload_bytes = (8 * 3 * 8 * 8 + 8) * 4.0;
  EXPECT_EQ(s.prefetched_bytes, s.offloaded_bytes);
  EXPECT_EQ(s.uploaded_bytes, batch_upload_bytes);
  EXPECT_GT(s.iteration_ms, 0.0);
}

// Async offloads park the blocks they free: the map keeps them taken (and
// out of the holes) from the park until they are given back or their
// tensor is placed in them again, and no two taken blocks ever overlap.
TEST(AddressMapScene, ParkedBlocksStayTakenUntilGivenBackOrReclaimed) {
  const std::size_t roomy = 4 * train({}, 1).pool_bytes;  // base's pool, four times over
  for (std::size_t budget : {std::size_t{0}, roomy}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    const TrainedRun run = train({.mode = OffloadMode::all}, 2, "best-fit", 0, budget);
    const AddressMapScene map = build_address_map(run.events, run.pool_bytes);
    ASSERT_FALSE(map.empty());
    int parked = 0;
    for (const MapBlock& b : map.blocks) parked += b.parked_until_step > b.last_step;
    if (budget == roomy) EXPECT_GT(parked, 5) << "a roomy pool parks every freed block";
    for (int step = 0; step < map.steps; ++step) {
      const Occupancy o = occupancy_at(map, step);
      std::vector<const MapBlock*> taken = o.live;
      taken.insert(taken.end(), o.parked.begin(), o.parked.end());
      std::sort(taken.begin(), taken.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
      for (std::size_t i = 1; i < taken.size(); ++i)
        ASSERT_LE(taken[i - 1]->end(), taken[i]->offset)
            << "step " << step << ": " << taken[i - 1]->name << " and " << taken[i]->name;
      for (const MapHole& h : o.holes)
        for (const MapBlock* b : o.parked) ASSERT_TRUE(h.offset + h.bytes <= b->offset || b->end() <= h.offset);
    }
    if (map.largest_free_at_peak)
      for (const MapBlock* b : occupancy_at(map, map.peak_step).parked) {
        const MapHole& h = *map.largest_free_at_peak;
        EXPECT_TRUE(h.offset + h.bytes <= b->offset || b->end() <= h.offset) << b->name << " is parked there";
      }
  }
}

TEST(StatsScene, BaseModeOnlyUploadsTheBatch) {
  const TrainedRun run = train({}, 1);
  const TimelineScene t = build_timeline(run.events, 1);
  const IterationStats s = build_stats(run.events, t, 0);
  EXPECT_EQ(s.offloaded_bytes, 0.0);
  EXPECT_EQ(s.prefetched_bytes, 0.0) << "the batch's upload is not a prefetch";
  EXPECT_EQ(s.uploaded_bytes, (8 * 3 * 8 * 8 + 8) * 4.0);
  EXPECT_FALSE(s.compressed);
  EXPECT_FALSE(t.compresses());
}

TEST(StatsScene, CompressedOffloadsShowWhatTheyTookOnTheHost) {
  const TrainedRun run = train({.mode = OffloadMode::conv, .compress = true}, 2);
  const TimelineScene t = build_timeline(run.events, 1);
  EXPECT_TRUE(t.compresses());
  const IterationStats s = build_stats(run.events, t, run.pinned_bytes);
  EXPECT_TRUE(s.compressed);
  EXPECT_EQ(s.compressed_bytes, static_cast<double>(run.results.back().compressed_to_bytes));
  EXPECT_EQ(s.offloaded_bytes, static_cast<double>(run.results.back().compressed_from_bytes));
  EXPECT_LT(s.compressed_bytes, s.offloaded_bytes);
}

}  // namespace
}  // namespace tidepool::ui
