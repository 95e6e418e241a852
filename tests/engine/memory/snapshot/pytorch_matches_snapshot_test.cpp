// The `pytorch` heuristic (engine/memory/allocators/pytorch.cpp) against
// the snapshots in examples/, whose segment events come from a model of
// CUDACachingAllocator's documented rules (examples/make_snapshots.py),
// written apart from the C++ one: replayed through `pytorch`, a complete
// trace (every segment it ends with allocated in it) reserves the bytes the
// trace's own segment_alloc/segment_free events say, after every event.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/memory/allocators/pytorch.h"
#include "engine/memory/replay.h"
#include "engine/memory/snapshot/snapshot_file.h"

namespace tidepool {
namespace {

std::string example(const std::string& name) { return std::string(TIDEPOOL_SOURCE_DIR) + "/examples/" + name; }

// Reserved bytes after each event of the trace that changed them.
using ReservedAfter = std::map<std::size_t, std::uint64_t>;

// The trace's own: a segment event before trace event i changed it, so
// it holds after event i; the last of several before one event holds.
ReservedAfter reserved_in_trace(const SnapshotTrace& s) {
  ReservedAfter after;
  for (const ReservedChange& c : s.reserved) after[c.trace_events] = c.reserved_bytes;
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

// `pytorch`'s, replayed in a device of `capacity` bytes.
ReservedAfter reserved_by_pytorch(const SnapshotTrace& s, std::size_t capacity) {
  auto allocator = make_pytorch_allocator(capacity, {});
  Extents extents;
  const TraceReplay r = replay(s.trace, *allocator, kParkUntilNeeded, &extents);
  EXPECT_TRUE(r.fits) << "failed at event " << r.failed_event;
  ReservedAfter after;
  std::uint64_t now = s.reserved_at_start;
  for (std::size_t i = 0; i < extents.after.size(); ++i)
    if (extents.after[i] != now) after[i] = now = extents.after[i];
  return after;
}

void expect_same_reserved(const std::string& file, std::size_t capacity) {
  SCOPED_TRACE(file);
  const SnapshotTrace s = read_snapshot_trace(read_file_bytes(example(file)), file, std::nullopt);
  ASSERT_EQ(s.live_at_start, 0u) << "a complete trace: every block allocated in it";
  ASSERT_EQ(s.reserved_at_start, 0u) << "a complete trace: every segment allocated in it";
  const ReservedAfter expected = reserved_in_trace(s), got = reserved_by_pytorch(s, capacity);
  ASSERT_FALSE(expected.empty());
  // Where they first part, if they do.
  auto e = expected.begin();
  auto g = got.begin();
  for (; e != expected.end() && g != got.end(); ++e, ++g) {
    ASSERT_EQ(g->first, e->first) << "reserved changes after another event: " << g->second << " B by pytorch, "
                                  << e->second << " B in the trace";
    ASSERT_EQ(g->second, e->second) << "after event " << e->first;
  }
  EXPECT_EQ(e, expected.end()) << "the trace changes reserved bytes after event " << e->first << " and pytorch does not";
  EXPECT_EQ(g, got.end()) << "pytorch changes reserved bytes after event " << g->first << " and the trace does not";
}

TEST(PytorchMatchesSnapshot, TwoStreamsReserveWhatTheTraceReserves) {
  expect_same_reserved("two_stream_snapshot.pickle", std::size_t{1} << 40);
}

TEST(PytorchMatchesSnapshot, AnOomTraceReservesWhatTheTraceReservesUpToItsOom) {
  const SnapshotTrace s = read_snapshot_trace(read_file_bytes(example("oom_snapshot.pickle")), "oom_snapshot.pickle", std::nullopt);
  ASSERT_FALSE(s.ooms.empty());
  // The device the trace ran on: what it had free at the oom, and what was reserved then.
  std::uint64_t reserved = 0;
  for (const ReservedChange& c : s.reserved)
    if (c.entry < s.ooms.front().entry) reserved = c.reserved_bytes;
  expect_same_reserved("oom_snapshot.pickle", reserved + s.ooms.front().device_free);
}

}  // namespace
}  // namespace tidepool
