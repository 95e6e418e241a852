// The overlap scenario's link: set from a measured iteration so that the
// forward pass's copies take a fixed share of its compute.
#include <gtest/gtest.h>

#include "ui/scene/overlap.h"

namespace tidepool::ui {
namespace {

TimelineSpan span(std::int64_t iteration, SpanKind kind, double start_us, double end_us, std::size_t bytes = 0) {
  TimelineSpan s;
  s.iteration = iteration;
  s.kind = kind;
  s.lane = kind == SpanKind::offload ? Stream::offload : Stream::compute;
  s.start_us = start_us;
  s.end_us = end_us;
  s.bytes = bytes;
  return s;
}

TEST(OverlapScenario, LinkMakesTheNewestIterationsCopiesTakeTheShareOfItsForwardCompute) {
  TimelineScene t;
  t.iterations = {{0, 0, 1000, 0}, {1, 1000, 3000, 0}};
  // Iteration 0 is older: it must not count.
  t.spans.push_back(span(0, SpanKind::forward, 0, 900));
  t.spans.push_back(span(0, SpanKind::offload, 0, 10, 1'000'000'000));
  // Iteration 1: 100 ms of forward compute, 60 MB offloaded; backward is not forward.
  t.spans.push_back(span(1, SpanKind::forward, 1000, 41000));
  t.spans.push_back(span(1, SpanKind::forward, 41000, 101000));
  t.spans.push_back(span(1, SpanKind::backward, 101000, 300000));
  t.spans.push_back(span(1, SpanKind::offload, 1000, 2000, 20'000'000));
  t.spans.push_back(span(1, SpanKind::offload, 2000, 3000, 40'000'000));
  // 60 MB in 0.6 x 100 ms: 1 GB/s.
  ASSERT_TRUE(overlap_link_gbps(t, 0.6).has_value());
  EXPECT_NEAR(*overlap_link_gbps(t, 0.6), 1.0, 1e-9);
  // Rounded to two significant figures: 60 MB in 0.7 x 100 ms is 0.857 GB/s.
  EXPECT_NEAR(*overlap_link_gbps(t, 0.7), 0.86, 1e-9);
}

TEST(OverlapScenario, SettingsOffloadEveryInputAndKeepTheHeuristic) {
  MemorySettings from;
  from.heuristic = "high-end";
  from.scheme = ConvScheme::m;
  from.budget_bytes = 123 << 20;
  const MemorySettings s = overlap_settings(from, TransferMode::async, 2.5);
  EXPECT_EQ(s.mode, OffloadMode::all);
  EXPECT_EQ(s.transfer, TransferMode::async);
  EXPECT_EQ(s.lookahead, OverlapScenario::lookahead);
  EXPECT_EQ(s.budget_bytes, 0u) << "the budget the scenario's settings need";
  EXPECT_DOUBLE_EQ(s.link_gbps, 2.5);
  EXPECT_EQ(s.heuristic, "high-end");
  EXPECT_EQ(s.scheme, ConvScheme::m);
  EXPECT_EQ(overlap_settings(from, TransferMode::async, 2.5, 99 << 20).budget_bytes, 99u << 20)
      << "a pool with room to park";
}

TEST(OverlapScenario, NoLinkWithoutForwardComputeOrOffloads) {
  TimelineScene t;
  EXPECT_FALSE(overlap_link_gbps(t).has_value()) << "no iteration";
  t.iterations = {{0, 0, 1000, 0}};
  t.spans.push_back(span(0, SpanKind::forward, 0, 900));
  EXPECT_FALSE(overlap_link_gbps(t).has_value()) << "nothing offloaded";
}

}  // namespace
}  // namespace tidepool::ui
