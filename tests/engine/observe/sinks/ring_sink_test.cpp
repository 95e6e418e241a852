#include "engine/observe/sinks/ring_sink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace tidepool {
namespace {

SpanEvent span(int step) {
  SpanEvent e;
  e.step = step;
  e.layer = "conv" + std::to_string(step);
  e.start_us = step;
  e.end_us = step + 0.5;
  return e;
}

LoadSample load(int step) {
  LoadSample s;
  s.step = step;
  s.load_bytes = static_cast<std::size_t>(step) * 100;
  return s;
}

TEST(RingSink, KeepsEventsOldestFirstUntilFull) {
  RingSink ring(RingCapacities{4, 4, 4, 4});
  for (int i = 0; i < 3; ++i) ring.on_span(span(i));
  const RingSnapshot s = ring.snapshot();
  ASSERT_EQ(s.spans.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(s.spans[static_cast<std::size_t>(i)].step, i);
    EXPECT_EQ(s.spans[static_cast<std::size_t>(i)].layer, "conv" + std::to_string(i));
  }
  EXPECT_EQ(s.dropped_spans, 0u);
  EXPECT_TRUE(s.allocs.empty());
  EXPECT_TRUE(s.loads.empty());
  EXPECT_TRUE(s.iterations.empty());
}

TEST(RingSink, WrapsAroundAndCountsDrops) {
  RingSink ring(RingCapacities{3, 2, 5, 1});
  for (int i = 0; i < 10; ++i) ring.on_span(span(i));
  for (int i = 0; i < 3; ++i) {
    AllocEvent a;
    a.tensor = i;
    ring.on_alloc(a);
  }
  for (int i = 0; i < 5; ++i) ring.on_load(load(i));  // exactly full: nothing dropped
  for (int i = 0; i < 4; ++i) {
    IterationSummary it;
    it.iteration = i;
    ring.on_iteration(it);
  }

  const RingSnapshot s = ring.snapshot();
  ASSERT_EQ(s.spans.size(), 3u);
  EXPECT_EQ(s.spans[0].step, 7);
  EXPECT_EQ(s.spans[1].step, 8);
  EXPECT_EQ(s.spans[2].step, 9);
  EXPECT_EQ(s.dropped_spans, 7u);

  ASSERT_EQ(s.allocs.size(), 2u);
  EXPECT_EQ(s.allocs[0].tensor, 1);
  EXPECT_EQ(s.allocs[1].tensor, 2);
  EXPECT_EQ(s.dropped_allocs, 1u);

  ASSERT_EQ(s.loads.size(), 5u);
  EXPECT_EQ(s.loads.front().step, 0);
  EXPECT_EQ(s.loads.back().load_bytes, 400u);
  EXPECT_EQ(s.dropped_loads, 0u);

  ASSERT_EQ(s.iterations.size(), 1u);
  EXPECT_EQ(s.iterations[0].iteration, 3);
  EXPECT_EQ(s.dropped_iterations, 3u);
}

TEST(RingSink, ZeroCapacityKeepsNothing) {
  RingSink ring(RingCapacities{0, 1, 1, 1});
  ring.on_span(span(1));
  ring.on_span(span(2));
  const RingSnapshot s = ring.snapshot();
  EXPECT_TRUE(s.spans.empty());
  EXPECT_EQ(s.dropped_spans, 2u);
}

TEST(RingSink, ClearEmptiesTheRingsAndDropCounts) {
  RingSink ring(RingCapacities{2, 2, 2, 2});
  for (int i = 0; i < 5; ++i) ring.on_span(span(i));
  ring.on_load(load(1));
  ring.clear();
  RingSnapshot s = ring.snapshot();
  EXPECT_TRUE(s.spans.empty());
  EXPECT_TRUE(s.loads.empty());
  EXPECT_EQ(s.dropped_spans, 0u);
  ring.on_span(span(9));
  s = ring.snapshot();
  ASSERT_EQ(s.spans.size(), 1u);
  EXPECT_EQ(s.spans[0].step, 9);
}

// What is wrong with a snapshot taken while spans then loads are written
// with steps 0, 1, 2, ...; empty when it is a consistent window.
std::string check_window(const RingSnapshot& s) {
  if (s.spans.size() > 64) return "ring over capacity";
  for (std::size_t i = 1; i < s.spans.size(); ++i) {
    if (s.spans[i].step != s.spans[i - 1].step + 1) return "spans out of order";
  }
  if (s.spans.empty()) return "";
  const int last = s.spans.back().step;
  // Dropped + held accounts for every span written before the snapshot.
  if (s.dropped_spans + s.spans.size() != static_cast<std::uint64_t>(last) + 1) {
    return "dropped + held != written";
  }
  // Each load is written right after its span: at most one behind.
  const int last_load = s.loads.empty() ? -1 : s.loads.back().step;
  if (last_load != last && last_load != last - 1) return "loads not in step with spans";
  return "";
}

TEST(RingSink, SnapshotsFromAnotherThreadWhileWriting) {
  constexpr int kMinEvents = 5000;
  constexpr int kMinSnapshots = 100;
  RingSink ring(RingCapacities{64, 64, 64, 64});
  std::atomic<int> snapshots{0};
  std::atomic<bool> writing{true}, stop{false};
  int written = 0;  // read by the test only after join()

  // The writer goes on until the reader has looked often enough, so the two
  // threads overlap however the scheduler runs them.
  std::thread writer([&] {
    while (!stop && (written < kMinEvents || snapshots.load() < kMinSnapshots)) {
      ring.on_span(span(written));
      ring.on_load(load(written));
      ++written;
    }
    writing = false;
  });

  std::string problem;
  while (writing && problem.empty()) {
    problem = check_window(ring.snapshot());
    ++snapshots;
  }
  stop = true;  // lets the writer finish if the reader gave up early
  writer.join();
  ASSERT_EQ(problem, "");

  const RingSnapshot s = ring.snapshot();
  ASSERT_EQ(s.spans.size(), 64u);
  EXPECT_EQ(s.spans.back().step, written - 1);
  EXPECT_EQ(s.dropped_spans, static_cast<std::uint64_t>(written - 64));
  EXPECT_EQ(s.loads.back().step, written - 1);
  EXPECT_GE(snapshots.load(), kMinSnapshots);
}

TEST(RingSink, WorksAsAnEventSink) {
  RingSink ring(RingCapacities{4, 4, 4, 4});
  FanOutSink fan;
  fan.add(ring);
  fan.on_span(span(1));
  fan.on_load(load(2));
  fan.flush();
  const RingSnapshot s = ring.snapshot();
  EXPECT_EQ(s.spans.size(), 1u);
  EXPECT_EQ(s.loads.size(), 1u);
}

}  // namespace
}  // namespace tidepool
