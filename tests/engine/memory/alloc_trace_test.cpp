// The allocation-trace CSV format (read, write, every malformed input) and
// replay(), with its overlap check.
#include <gtest/gtest.h>

#include <sstream>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/replay.h"
#include "engine/memory/allocator.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/planner.h"
#include "testing/networks.h"
#include "testing/temp_dir.h"

namespace tidepool {
namespace {

constexpr std::size_t U = kAllocGranularity;

AllocTrace parse(const std::string& text) {
  std::istringstream in(text);
  return read_trace(in, "trace.csv");
}

// The message of the std::invalid_argument that parsing `text` throws.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(AllocTrace, ReadsTheDocumentedFormat) {
  const AllocTrace t = parse(
      "# a forward pass\n"
      "event,id,bytes,offload\n"
      "alloc,0,1000,0\n"
      "\n"
      "alloc, 1 ,300,1\r\n"
      "free,1,,\n"
      "alloc,2,256\n"  // a row may leave out an empty offload field
      "free,0,\n"
      "free,2,,0\n");
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0], (TraceEvent{TraceEvent::Kind::alloc, 0, 1000, false}));
  EXPECT_EQ(t[1], (TraceEvent{TraceEvent::Kind::alloc, 1, 300, true}));
  EXPECT_EQ(t[2], (TraceEvent{TraceEvent::Kind::free, 1, 0, false}));
  EXPECT_EQ(t[3], (TraceEvent{TraceEvent::Kind::alloc, 2, 256, false}));
  EXPECT_EQ(peak_load_bytes(t), round_up(1000) + round_up(300));
  EXPECT_EQ(total_alloc_bytes(t), 3 * most_claimed_bytes(1000)) << "a pytorch small segment for each";
  EXPECT_EQ(most_claimed_bytes(1000), std::size_t{2} << 20);
}

TEST(AllocTrace, TheOffloadColumnIsOptional) {
  const AllocTrace t = parse("event,id,bytes\nalloc,7,512\nfree,7,\nalloc,7,100\n");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_FALSE(t[0].will_offload);
  EXPECT_EQ(t[2].id, 7) << "an id can be allocated again once freed";
  EXPECT_NE(error_of("event,id,bytes\nalloc,7,512,1\n"), "(no error)") << "no offload column in the header";
}

TEST(AllocTrace, WritesWhatItReads) {
  const AllocTrace t = {{TraceEvent::Kind::alloc, 3, 1, false},          {TraceEvent::Kind::alloc, -4, 70000, true},
                        {TraceEvent::Kind::free, 3, 0, false},           {TraceEvent::Kind::alloc, 3, 5 * U, false},
                        {TraceEvent::Kind::free, -4, 0, false},          {TraceEvent::Kind::free, 3, 0, false},
                        {TraceEvent::Kind::alloc, 1ll << 40, 1ull << 47, false}};
  std::ostringstream out;
  write_trace(out, t);
  EXPECT_EQ(out.str().substr(0, 23), "event,id,bytes,offload\n");
  EXPECT_EQ(parse(out.str()), t);

  const testing::TempDir dir("alloc_trace");
  const auto path = dir / "trace.csv";
  write_trace_file(path.string(), t);
  EXPECT_EQ(read_trace_file(path.string()), t);
}

// On a free, the offload column marks a block whose copy to the host may
// still run (async transfers): the replay parks it, as a real run does.
TEST(AllocTrace, AFreeAfterACopyParksTheBlockUntilThePoolNeedsIt) {
  const AllocTrace t = parse(
      "event,id,bytes,offload\n"
      "alloc,0,256,1\nalloc,1,256,0\nfree,0,,1\n"
      "alloc,2,256,0\n"    // room above: the parked block stays taken
      "alloc,3,256,0\n");  // no room: the parked block goes back and is reused
  ASSERT_EQ(t.size(), 5u);
  EXPECT_TRUE(t[2].after_copy);
  EXPECT_FALSE(t[2].will_offload);
  std::ostringstream out;
  write_trace(out, t);
  EXPECT_NE(out.str().find("free,0,,1\n"), std::string::npos) << out.str();
  EXPECT_EQ(parse(out.str()), t);

  auto pool = make_allocator("best-fit", 3 * U);
  const TraceReplay r = replay(t, *pool);
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.figures.peak_load_bytes, 3 * U) << "a parked block is out of the load";
  // Every free at once would fit in 3 units too; the same trace without the
  // pool's room fails only once no parked block is left to give back.
  auto small = make_allocator("best-fit", 2 * U);
  EXPECT_FALSE(replay(t, *small).fits);
}

TEST(AllocTrace, MalformedLinesNameTheFileAndLine) {
  struct Case {
    const char* text;
    const char* expected;  // in the message, after "trace.csv:<line>: "
  };
  const Case cases[] = {
      {"", "empty trace"},
      {"# only a comment\n", "empty trace"},
      {"event,id,size\n", "trace.csv:1: expected the header"},
      {"alloc,0,256,0\n", "trace.csv:1: expected the header"},
      {"event,id,bytes,offload\nmalloc,0,256,0\n", "trace.csv:2: unknown event 'malloc'"},
      {"event,id,bytes,offload\nalloc,x,256,0\n", "trace.csv:2: id 'x' is not an integer"},
      {"event,id,bytes,offload\nalloc,1.5,256,0\n", "trace.csv:2: id '1.5' is not an integer"},
      {"event,id,bytes,offload\nalloc,0,,0\n", "trace.csv:2: alloc of id 0 has no bytes"},
      {"event,id,bytes,offload\nalloc,0,-5,0\n", "trace.csv:2: bytes '-5' is not a non-negative integer"},
      {"event,id,bytes,offload\nalloc,0,0,0\n", "trace.csv:2: alloc of id 0 has no size"},
      {"event,id,bytes,offload\nalloc,0,281474976710657,0\n", "trace.csv:2: alloc of id 0 is too large"},
      {"event,id,bytes,offload\nalloc,0,256,2\n", "trace.csv:2: offload '2' must be 0 or 1"},
      {"event,id,bytes,offload\nalloc,0\n", "trace.csv:2: expected 4 comma-separated fields, got 2"},
      {"event,id,bytes,offload\nalloc,0,256,0,9\n", "trace.csv:2: expected 4 comma-separated fields, got 5"},
      {"event,id,bytes,offload\nalloc,0,256,0\nfree,0,abc,\n", "trace.csv:3: bytes 'abc' is not a non-negative"},
      {"event,id,bytes,offload\nalloc,0,256,0\n\nfree,1,,\n", "trace.csv:4: free of id 1, which is not live"},
      {"event,id,bytes,offload\nalloc,0,256,0\nfree,0,,\nfree,0,,\n", "trace.csv:4: free of id 0, which is not live"},
      {"event,id,bytes,offload\nalloc,0,256,0\nalloc,0,512,0\n", "trace.csv:3: alloc of id 0, which is still live"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string message = error_of(c.text);
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(AllocTrace, AMissingFileIsNamed) {
  try {
    read_trace_file("/nonexistent/trace.csv");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/trace.csv"), std::string::npos);
  }
}

TEST(AllocTrace, ValidateNamesTheEvent) {
  const AllocTrace t = {{TraceEvent::Kind::alloc, 0, U, false}, {TraceEvent::Kind::free, 9, 0, false}};
  try {
    validate(t);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("trace event 1: free of id 9"), std::string::npos) << e.what();
  }
  auto a = make_allocator("best-fit", 4 * U);
  EXPECT_THROW(replay(t, *a), std::invalid_argument);
}

TEST(AllocTrace, ReplayStopsAtTheFirstRequestThatDoesNotFit) {
  const AllocTrace t = parse("event,id,bytes\nalloc,0,1024\nalloc,1,512\nfree,0,\nalloc,2,1280\n");
  auto a = make_allocator("best-fit", 6 * U);
  const TraceReplay r = replay(t, *a);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.failed_event, 3);
  EXPECT_EQ(r.failure.request_bytes, 5 * U);
  EXPECT_EQ(r.failure.largest_free_bytes, 4 * U);
  EXPECT_EQ(r.figures.peak_load_bytes, 6 * U);
  auto big = make_allocator("best-fit", 16 * U);
  const TraceReplay ok = replay(t, *big);
  EXPECT_TRUE(ok.fits);
  EXPECT_EQ(ok.figures.footprint_bytes, 11 * U);
  EXPECT_EQ(ok.figures.peak_load_bytes, 7 * U);
  EXPECT_EQ(ok.figures.largest_free_at_peak.bytes, 4 * U) << "the 4-unit hole the first block left";
}

// A policy that breaks the rules on purpose, to show the check catches it.
class Broken final : public Allocator {
 public:
  enum class Fault { overlap, past_the_pool, misaligned };
  Broken(std::size_t pool, Fault fault) : pool_(pool), fault_(fault) {}
  std::string_view name() const override { return "broken"; }
  std::optional<std::size_t> allocate(const AllocRequest& r) override {
    switch (fault_) {
      case Fault::overlap: return U * next_++;  // one granule apart, whatever the size
      case Fault::past_the_pool: return pool_ - U;
      case Fault::misaligned: return std::size_t{8};
    }
    return std::nullopt;
  }
  void free(std::size_t) override {}
  PoolStats stats() const override {
    PoolStats s;
    s.pool_bytes = pool_;
    return s;
  }

 private:
  std::size_t pool_;
  Fault fault_;
  std::size_t next_ = 0;
};

TEST(AllocTrace, ReplayThrowsWhenAPolicyOverlapsOrLeavesThePool) {
  const AllocTrace t = parse("event,id,bytes\nalloc,0,1024\nalloc,1,1024\n");
  for (auto fault : {Broken::Fault::overlap, Broken::Fault::past_the_pool, Broken::Fault::misaligned}) {
    Broken b(16 * U, fault);
    EXPECT_THROW(replay(t, b), std::logic_error);
    try {
      Broken again(16 * U, fault);
      replay(t, again);
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("allocator 'broken'"), std::string::npos) << e.what();
    }
  }
}

TEST(AllocTrace, EveryPolicyReplaysAScheduleWithoutOverlap) {
  CpuKernels kernels;
  const Network net = testing::residual_net();
  const Schedule s = plan_schedule(net, 4, {.memory = {.mode = OffloadMode::conv}}, kernels);
  const AllocTrace t = trace_of(s, 2);
  std::size_t allocs = s.persistent.size(), frees = 0;
  for (const Step& st : s.steps) {
    allocs += 2 * (st.kind == StepKind::alloc);
    frees += 2 * (st.kind == StepKind::free);
  }
  ASSERT_EQ(t.size(), allocs + frees);
  EXPECT_EQ(peak_load_bytes(t), s.peak_load_bytes) << "the planner's own prediction";
  for (const std::string& name : allocator_names()) {
    auto a = make_allocator(name, total_alloc_bytes(t));
    const TraceReplay r = replay(t, *a);
    EXPECT_TRUE(r.fits) << name;
    EXPECT_EQ(r.stats.load_bytes, s.persistent_bytes) << name << ": the parameters stay";
  }
}

}  // namespace
}  // namespace tidepool
