// Whether two snapshots' traces (engine/memory/snapshot/snapshot_trace.h)
// are one: what every way of reading the same snapshot (pickle protocols,
// JSON, a run and its export) must agree on.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/memory/snapshot/snapshot_trace.h"

namespace tidepool::testing {

inline void expect_same_snapshot_trace(const SnapshotTrace& got, const SnapshotTrace& want, const std::string& what) {
  EXPECT_EQ(got.trace, want.trace) << what;
  EXPECT_EQ(got.stream, want.stream) << what;
  EXPECT_EQ(got.streams, want.streams) << what;
  EXPECT_EQ(got.entry, want.entry) << what;
  EXPECT_EQ(got.entries, want.entries) << what;
  EXPECT_EQ(got.live_at_start, want.live_at_start) << what;
  EXPECT_EQ(got.stacks, want.stacks) << what;
  EXPECT_EQ(got.stack_labels, want.stack_labels) << what;
  EXPECT_EQ(got.peak_reserved, want.peak_reserved) << what;
  EXPECT_EQ(got.reserved_at_start, want.reserved_at_start) << what;
}

}  // namespace tidepool::testing
