// The replays kept in a process (engine/memory/replay_memo.h): an answer
// comes back only for the very same question, it is the answer the replay
// gives, and the memo keeps no more than its bytes.
#include <gtest/gtest.h>

#include <string>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/memory/replay.h"
#include "engine/memory/replay_memo.h"
#include "engine/plan/memory_plan.h"
#include "engine/plan/planner.h"
#include "testing/networks.h"
#include "testing/traces.h"

namespace tidepool {
namespace {

using testing::alloc;
using testing::release;

void expect_same(const TraceReplay& a, const TraceReplay& b) {
  EXPECT_EQ(a.fits, b.fits);
  EXPECT_EQ(a.failed_event, b.failed_event);
  EXPECT_EQ(a.failure.request_bytes, b.failure.request_bytes);
  EXPECT_EQ(a.failure.largest_free_bytes, b.failure.largest_free_bytes);
  EXPECT_EQ(a.stats.load_bytes, b.stats.load_bytes);
  EXPECT_EQ(a.stats.extent_bytes, b.stats.extent_bytes);
  EXPECT_EQ(a.stats.largest_free_block_bytes, b.stats.largest_free_block_bytes);
  EXPECT_EQ(a.stats.free_holes, b.stats.free_holes);
  EXPECT_EQ(a.figures.peak_load_bytes, b.figures.peak_load_bytes);
  EXPECT_EQ(a.figures.footprint_bytes, b.figures.footprint_bytes);
  EXPECT_EQ(a.figures.peak_event, b.figures.peak_event);
  EXPECT_EQ(a.figures.largest_free_at_peak.offset, b.figures.largest_free_at_peak.offset);
  EXPECT_EQ(a.figures.largest_free_at_peak.bytes, b.figures.largest_free_at_peak.bytes);
}

ScheduleReplay answer_with_pool(std::size_t pool) {
  ScheduleReplay r;
  r.pool_bytes = pool;
  r.first.figures.peak_load_bytes = pool / 2;
  return r;
}

TEST(ReplayMemo, AnAnswerComesBackOnlyForTheSameQuestion) {
  forget_replays();
  AllocTrace first = {alloc(0, 1024), alloc(1, 512), release(1)}, steady = {alloc(1, 512), release(1)};
  first[0].step = -1;
  const MemoRequests asked{{&first, &steady}, fingerprint(steady, fingerprint(first, 1))};
  keep_schedule_replay(asked, "best-fit", 4096, 0, answer_with_pool(4096));

  // Equal requests in other vectors: found.
  const AllocTrace first_copy = first, steady_copy = steady;
  const auto found = find_schedule_replay({{&first_copy, &steady_copy}, asked.fingerprint}, "best-fit", 4096, 0);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->pool_bytes, 4096u);
  EXPECT_EQ(found->first.figures.peak_load_bytes, 2048u);

  // Another policy, pool or horizon: another question.
  EXPECT_FALSE(find_schedule_replay(asked, "first-fit", 4096, 0));
  EXPECT_FALSE(find_schedule_replay(asked, "best-fit", 4352, 0));
  EXPECT_FALSE(find_schedule_replay(asked, "best-fit", 4096, 1));
  // A pool search of the same requests is another question too.
  EXPECT_FALSE(find_pool_search(asked, "best-fit", 0));

  // Requests that differ in a step only (which the figures report), even
  // under the same fingerprint: another question.
  AllocTrace moved = first;
  moved[1].step = 7;
  EXPECT_FALSE(find_schedule_replay({{&moved, &steady}, asked.fingerprint}, "best-fit", 4096, 0));
  EXPECT_NE(fingerprint(moved, 1), fingerprint(first, 1));
  // Or in a stream (pytorch keeps its blocks per stream).
  AllocTrace other_stream = first;
  other_stream[1].stream = 1;
  EXPECT_FALSE(find_schedule_replay({{&other_stream, &steady}, asked.fingerprint}, "best-fit", 4096, 0));
  EXPECT_NE(fingerprint(other_stream, 1), fingerprint(first, 1));
  // And in a size.
  AllocTrace larger = first;
  larger[1].bytes = 768;
  EXPECT_FALSE(find_schedule_replay({{&larger, &steady}, asked.fingerprint}, "best-fit", 4096, 0));
}

TEST(ReplayMemo, AKeptAnswerIsTheReplaysAnswer) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  MemorySettings settings;
  settings.mode = OffloadMode::all;
  const Schedule train = plan_schedule(net, 8, {Phase::train, settings, {}}, kernels);
  const ScheduleTraces traces(train);
  for (const std::string& heuristic : allocator_names()) {
    SCOPED_TRACE(heuristic);
    const std::size_t pool = search_pool_size(train, heuristic).pool_bytes;
    for (int horizon : {0, 1, kParkUntilNeeded}) {
      forget_replays();
      ASSERT_FALSE(find_schedule_replay({{&traces.first, &traces.steady}, traces.fingerprint}, heuristic, pool, horizon));
      const ScheduleReplay fresh = replay_schedule(traces, heuristic, pool, horizon);
      ASSERT_TRUE(find_schedule_replay({{&traces.first, &traces.steady}, traces.fingerprint}, heuristic, pool, horizon));
      const ScheduleReplay kept = replay_schedule(traces, heuristic, pool, horizon);
      EXPECT_EQ(kept.pool_bytes, fresh.pool_bytes);
      expect_same(kept.first, fresh.first);
      expect_same(kept.steady, fresh.steady);
      // A replay with an observer is always made, and agrees.
      struct Count : PoolObserver {
        int events = 0;
        void on_pool_event(const PoolEvent&) override { ++events; }
      } observer;
      const ScheduleReplay observed = replay_schedule(traces, heuristic, pool, horizon, &observer);
      EXPECT_GT(observer.events, 0);
      expect_same(observed.first, fresh.first);
      expect_same(observed.steady, fresh.steady);
    }
  }
  // The pool search's answer too.
  forget_replays();
  const PoolSearch fresh = search_pool_size(train, "best-fit", 0);
  const PoolSearch kept = search_pool_size(train, "best-fit", 0);
  EXPECT_EQ(kept.pool_bytes, fresh.pool_bytes);
  EXPECT_EQ(kept.restarts, fresh.restarts);
  expect_same(kept.replay, fresh.replay);
}

TEST(ReplayMemo, KeepsNoMoreThanItsBytesAndDropsTheLeastRecentlyUsed) {
  forget_replays();
  // Distinct requests of 1 MiB each, more of them than the memo holds.
  const std::size_t events = (std::size_t{1} << 20) / sizeof(TraceEvent);
  const std::size_t count = kMemoBytes / (std::size_t{1} << 20) + 8;
  std::vector<AllocTrace> traces(count);
  for (std::size_t t = 0; t < count; ++t) {
    for (std::size_t e = 0; e < events / 2; ++e) {
      traces[t].push_back(alloc(static_cast<std::int64_t>(e), 256 * (t + 1)));
      traces[t].push_back(release(static_cast<std::int64_t>(e)));
    }
    const MemoRequests asked{{&traces[t]}, fingerprint(traces[t], 1)};
    keep_schedule_replay(asked, "best-fit", 4096, 0, answer_with_pool(4096));
    // The first one asked again each time: the least recently used is another.
    if (t > 0) EXPECT_TRUE(find_schedule_replay({{&traces[0]}, fingerprint(traces[0], 1)}, "best-fit", 4096, 0));
    EXPECT_LE(kept_replay_bytes(), kMemoBytes);
  }
  EXPECT_TRUE(find_schedule_replay({{&traces[count - 1]}, fingerprint(traces[count - 1], 1)}, "best-fit", 4096, 0));
  EXPECT_FALSE(find_schedule_replay({{&traces[1]}, fingerprint(traces[1], 1)}, "best-fit", 4096, 0));
  // Answers that share their requests keep them once.
  const std::size_t before = kept_replay_bytes();
  const MemoRequests last{{&traces[count - 1]}, fingerprint(traces[count - 1], 1)};
  keep_schedule_replay(last, "first-fit", 4096, 0, answer_with_pool(4096));
  keep_pool_search(last, "best-fit", 0, PoolSearch{});
  EXPECT_EQ(kept_replay_bytes(), before);
  forget_replays();
  EXPECT_EQ(kept_replay_bytes(), 0u);
}

}  // namespace
}  // namespace tidepool
