// The events a data-parallel run's other ranks forward to the window on
// rank 0: every event arrives, in order, whole; a rank that starts over
// replaces its events; what cannot be read is reported, not crashed on;
// and a sender that cannot send drops events rather than grow without end.
#include "engine/observe/rank_events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "engine/comm/local_group.h"
#include "testing/recorder.h"
#include "testing/sample_events.h"

namespace tidepool {
namespace {

using namespace std::chrono_literals;
using testing::RecordedEvent;
using testing::run_events;

// Rings large enough to keep every event of these tests.
constexpr RingCapacities kAll{.spans = 1 << 12, .allocs = 1 << 12, .loads = 1 << 12, .iterations = 1 << 8};

// What a ring holds, in the order a Recorder would have it by kind.
testing::Recorder contents(const RingSink& ring) {
  const RingSnapshot s = ring.snapshot();
  testing::Recorder r;
  for (const AllocEvent& e : s.placement) r.on_alloc(e);
  for (const SpanEvent& e : s.spans) r.on_span(e);
  for (const AllocEvent& e : s.allocs) r.on_alloc(e);
  for (const LoadSample& e : s.loads) r.on_load(e);
  for (const IterationSummary& e : s.iterations) r.on_iteration(e);
  return r;
}

testing::Recorder recorded(const std::vector<RecordedEvent>& events) {
  testing::Recorder r;
  for (const RecordedEvent& e : events) testing::send(r, e);
  return r;
}

TEST(RankEvents, EveryRanksEventsReachRankZeroWhole) {
  LocalGroup group(3);
  RankEvents received(group.rank(0), kAll);
  const std::vector<RecordedEvent> one = run_events(3), two = run_events(2);
  EventForwarder a(group.rank(1), 1ms), b(group.rank(2), 1ms);
  for (const RecordedEvent& e : one) testing::send(a, e);
  for (const RecordedEvent& e : two) testing::send(b, e);
  a.finish();  // the last messages sent
  b.finish();
  // However many messages the 1 ms interval cut the events into, rank 0
  // takes every one; then each rank has said it is done.
  EXPECT_EQ(received.wait_for_messages(a.sent() + b.sent()), a.sent() + b.sent());
  ASSERT_TRUE(received.finish(0ms)) << "every rank's last message came";
  EXPECT_TRUE(received.problems().empty());
  const testing::Recorder got1 = contents(received.ring(1)), want1 = recorded(one);
  EXPECT_EQ(got1.spans, want1.spans);
  EXPECT_EQ(got1.allocs, want1.allocs) << "the placement and every later allocation, names resolved";
  EXPECT_EQ(got1.loads, want1.loads);
  EXPECT_EQ(got1.iterations, want1.iterations);
  EXPECT_EQ(contents(received.ring(2)).iterations, recorded(two).iterations);
  EXPECT_THROW(received.ring(0), std::out_of_range) << "rank 0's events are its own";
}

TEST(RankEvents, ARankThatStartsOverReplacesItsEvents) {
  LocalGroup group(2);
  RankEvents received(group.rank(0), kAll);
  // No interval passes in this test: only flush() and finish() send, so
  // the messages are exactly the two below.
  EventForwarder forwarder(group.rank(1), std::chrono::hours(1));
  for (const RecordedEvent& e : run_events(3)) testing::send(forwarder, e);
  forwarder.flush();
  ASSERT_EQ(received.wait_for_messages(1), 1u);
  ASSERT_EQ(received.ring(1).snapshot().iterations.size(), 3u);

  forwarder.start_over();  // a teaching scenario: a new session, new names
  testing::send(forwarder, SpanEvent{.iteration = 0, .layer = "scenario", .tensor = ""});
  forwarder.finish();
  EXPECT_EQ(forwarder.sent(), 2u);
  ASSERT_EQ(received.wait_for_messages(2), 2u);
  ASSERT_TRUE(received.finish(0ms)) << "the second message was the last";
  const RingSnapshot s = received.ring(1).snapshot();
  EXPECT_TRUE(s.iterations.empty()) << "the old session's events are gone";
  ASSERT_EQ(s.spans.size(), 1u);
  EXPECT_EQ(s.spans[0].layer, "scenario") << "its string table starts afresh";
  EXPECT_TRUE(received.problems().empty());
}

TEST(RankEvents, AMessageThatIsNotEventsIsReportedAndItsRankIgnored) {
  LocalGroup group(2);
  RankEvents received(group.rank(0), kAll);
  group.rank(1).send(0, kEventsTag, {0, 0, 0, 0, 0, 0, 0, 0, 0, 99});  // session 0, then record type 99
  group.rank(1).send(0, kEventsTag, {1, 2});                           // shorter than a header
  ASSERT_EQ(received.wait_for_messages(2), 2u);
  EXPECT_FALSE(received.finish(0ms)) << "rank 1 never said it was done";
  const std::vector<std::string> problems = received.problems();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("rank 1: its events cannot be read: unknown record type 99"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("a message of 2 bytes"), std::string::npos) << problems[1];
}

TEST(RankEvents, EventsThatCannotBeSentAreDroppedAndCounted) {
  LocalGroup group(2);
  EventForwarder forwarder(group.rank(1), std::chrono::hours(1));  // nothing leaves before finish()
  const LoadSample sample{.iteration = 1, .step = 2, .time_us = 3, .load_bytes = 4};
  const std::size_t sent = kMaxForwardBytes / event_file::kLoadBytes + 1000;
  for (std::size_t i = 0; i < sent; ++i) forwarder.on_load(sample);
  EXPECT_GT(forwarder.dropped(), 0u);
  forwarder.finish();
  const auto m = group.rank(0).try_receive(kEventsTag);
  ASSERT_TRUE(m);
  EXPECT_LE(m->bytes.size(), kMaxForwardBytes + 64) << "what waited stayed bounded";
  EXPECT_EQ((m->bytes.size() - 9) / (1 + event_file::kLoadBytes) + forwarder.dropped(), sent)
      << "every sample was either sent or counted as dropped";
}

TEST(RankEvents, RankZeroForwardsNothingAndOnlyRankZeroReceives) {
  LocalGroup group(2);
  EXPECT_THROW(EventForwarder(group.rank(0)), std::invalid_argument);
  EXPECT_THROW(RankEvents(group.rank(1), kAll), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
