// The `pytorch` heuristic (engine/memory/allocators/pytorch.cpp) against
// the complete snapshots in examples/, whose segment events come from a
// model of CUDACachingAllocator's documented rules written apart from the
// C++ one (examples/make_snapshots.py): replayed through `pytorch`, a trace
// reserves the bytes its own segment_alloc/segment_free events say, after
// every event, up to where a segment needs one range of Tidepool's arena
// that a device's pages would not.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/memory/allocators/pytorch.h"
#include "engine/memory/replay.h"
#include "engine/memory/snapshot/snapshot_file.h"
#include "testing/examples.h"

namespace tidepool {
namespace {

// Reserved bytes after each event of the trace that changed them.
using ReservedAfter = std::map<std::size_t, std::uint64_t>;

// The trace's own, after each of its events: a segment event before trace
// event i changed it, so it holds after event i; the last of several
// before one event holds. Changes after the last event (an empty_cache at
// the end: no request asks for them) are left out.
ReservedAfter reserved_in_trace(const SnapshotTrace& s) {
  ReservedAfter after;
  for (const ReservedChange& c : s.reserved)
    if (c.trace_events < s.trace.size()) after[c.trace_events] = c.reserved_bytes;
  return after;
}

struct Extents final : PoolObserver {
  std::vector<std::size_t> after;  // per trace event
  void on_pool_event(const PoolEvent& e) override {
    const auto i = static_cast<std::size_t>(e.event);
    if (after.size() <= i) after.resize(i + 1, 0);
    after[i] = e.extent_bytes;
  }
};

// `pytorch`'s in a pool of `capacity` bytes, up to the event where it
// fails, if it does (`replayed`).
ReservedAfter reserved_by_pytorch(const SnapshotTrace& s, std::size_t capacity, TraceReplay& replayed) {
  auto allocator = make_pytorch_allocator(capacity, {});
  Extents extents;
  replayed = replay(s.trace, *allocator, kParkUntilNeeded, &extents);
  ReservedAfter after;
  std::uint64_t now = s.reserved_at_start;
  for (std::size_t i = 0; i < extents.after.size(); ++i)
    if (extents.after[i] != now) after[i] = now = extents.after[i];
  return after;
}

// The sequences agree event for event, up to `until` (the first event not
// compared).
void expect_same_reserved(const ReservedAfter& expected, const ReservedAfter& got, std::size_t until) {
  ASSERT_FALSE(expected.empty());
  auto e = expected.begin();
  auto g = got.begin();
  for (; e != expected.end() && e->first < until && g != got.end(); ++e, ++g) {
    ASSERT_EQ(g->first, e->first) << "reserved changes after another event: " << g->second << " B by pytorch, "
                                  << e->second << " B in the trace";
    ASSERT_EQ(g->second, e->second) << "after event " << e->first;
  }
  EXPECT_TRUE(e == expected.end() || e->first >= until)
      << "the trace changes reserved bytes after event " << e->first << " and pytorch does not";
  EXPECT_TRUE(g == got.end() || g->first >= until)
      << "pytorch changes reserved bytes after event " << g->first << " and the trace does not";
}

SnapshotTrace complete_example(const std::string& file) {
  SnapshotTrace s = read_snapshot_trace(read_file_bytes(testing::example_path(file)), file, std::nullopt);
  EXPECT_EQ(s.live_at_start, 0u) << "a complete trace: every block allocated in it";
  EXPECT_EQ(s.reserved_at_start, 0u) << "a complete trace: every segment allocated in it";
  return s;
}

TEST(PytorchMatchesSnapshot, TwoStreamsReserveWhatTheTraceReservesAfterEveryEvent) {
  const SnapshotTrace s = complete_example("two_stream_snapshot.pickle");
  TraceReplay r;
  const ReservedAfter got = reserved_by_pytorch(s, std::size_t{1} << 40, r);
  ASSERT_TRUE(r.fits);
  expect_same_reserved(reserved_in_trace(s), got, s.trace.size());
}

// The oom trace ran on a device of 120 MiB. Through its first 121 events
// pytorch reserves what the trace reserves, the segments it gives back
// before the oom's retry included; then the trace's allocator takes a
// 32 MiB segment in memory its freed segments left in pieces, which a
// device's pages allow and Tidepool's arena does not (a segment is one
// range of the pool: docs/memory.md, The `pytorch` heuristic), so pytorch
// fails there with the bytes free.
TEST(PytorchMatchesSnapshot, AnOomTraceReservesWhatTheTraceReservesUntilASegmentNeedsOneRange) {
  const SnapshotTrace s = complete_example("oom_snapshot.pickle");
  ASSERT_EQ(s.ooms.size(), 1u);
  // The device: what it had free at the oom, and what was reserved then.
  std::uint64_t reserved = 0;
  for (const ReservedChange& c : s.reserved)
    if (c.entry < s.ooms.front().entry) reserved = c.reserved_bytes;
  const std::size_t capacity = reserved + s.ooms.front().device_free;
  TraceReplay r;
  const ReservedAfter expected = reserved_in_trace(s), got = reserved_by_pytorch(s, capacity, r);
  ASSERT_FALSE(r.fits);
  ASSERT_EQ(r.failed_event, 121);
  expect_same_reserved(expected, got, 121);
  // What the trace's allocator reserved with that event fits the device.
  ASSERT_EQ(expected.count(121), 1u);
  EXPECT_LE(expected.at(121), capacity);
  EXPECT_GT(capacity - got.rbegin()->second, r.failure.request_bytes) << "pytorch failed with the bytes free";
}

}  // namespace
}  // namespace tidepool
