// The pytorch policy (engine/memory/allocators/pytorch.cpp): one test per
// rule of PyTorch's CUDACachingAllocator, on hand-made sequences whose
// reserved bytes are worked out in the comments. The properties every
// policy shares are in allocator_test.cpp.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <random>
#include <string>
#include <stdexcept>
#include <vector>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocators/pytorch.h"
#include "engine/memory/pool_search.h"
#include "engine/memory/replay.h"
#include "testing/traces.h"

namespace tidepool {
namespace {

using pytorch::kMiB;
constexpr std::size_t KiB = 1024;

class Pytorch {
 public:
  explicit Pytorch(std::size_t pool = 1024 * kMiB, const PytorchAllocConf& conf = {})
      : allocator_(make_pytorch_allocator(pool, conf)) {}
  std::optional<std::size_t> alloc(std::size_t bytes, int stream = 0) {
    return allocator_->allocate({bytes, -1, Role::activation, false, stream});
  }
  std::size_t must_alloc(std::size_t bytes, int stream = 0) {
    const auto offset = alloc(bytes, stream);
    EXPECT_TRUE(offset.has_value()) << bytes << " bytes on stream " << stream;
    return offset.value_or(0);
  }
  void free(std::size_t offset) { allocator_->free(offset); }
  std::size_t reserved() const { return allocator_->stats().extent_bytes; }
  Allocator& allocator() { return *allocator_; }

 private:
  std::unique_ptr<Allocator> allocator_;
};

TEST(PytorchRules, RoundSizeIsAMultipleOf512AtLeastOne) {
  EXPECT_EQ(pytorch::round_size(0), 512u);
  EXPECT_EQ(pytorch::round_size(1), 512u);
  EXPECT_EQ(pytorch::round_size(512), 512u);
  EXPECT_EQ(pytorch::round_size(513), 1024u);
}

TEST(PytorchRules, AllocationSizeIsTheSegmentOfEachPool) {
  EXPECT_EQ(pytorch::allocation_size(512), 2 * kMiB);
  EXPECT_EQ(pytorch::allocation_size(kMiB), 2 * kMiB) << "1 MiB is still small";
  EXPECT_EQ(pytorch::allocation_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(pytorch::allocation_size(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(pytorch::allocation_size(10 * kMiB), 10 * kMiB) << "kMinLargeAlloc on: rounded to 2 MiB";
  EXPECT_EQ(pytorch::allocation_size(10 * kMiB + 512), 12 * kMiB);
}

TEST(PytorchAllocator, RoundsEveryRequestTo512Bytes) {
  Pytorch p;
  EXPECT_EQ(p.must_alloc(1), 0u);
  EXPECT_EQ(p.must_alloc(513), 512u) << "the first took 512 B";
  EXPECT_EQ(p.must_alloc(1), 1536u) << "the second took 1024 B";
  EXPECT_EQ(p.allocator().stats().load_bytes, 5 * kAllocGranularity) << "the load is the requests' 256-B granules";
}

TEST(PytorchAllocator, SmallRequestsShareA2MiBSegment) {
  Pytorch p;
  p.must_alloc(kMiB);
  EXPECT_EQ(p.reserved(), 2 * kMiB);
  p.must_alloc(kMiB);
  EXPECT_EQ(p.reserved(), 2 * kMiB) << "the rest of the first segment";
  p.must_alloc(512);
  EXPECT_EQ(p.reserved(), 4 * kMiB) << "a second small segment";
}

TEST(PytorchAllocator, LargeRequestsBelow10MiBGetA20MiBSegment) {
  Pytorch p;
  const std::size_t a = p.must_alloc(kMiB + 1);
  EXPECT_EQ(p.reserved(), 20 * kMiB);
  EXPECT_EQ(p.must_alloc(8 * kMiB), a + kMiB + 512) << "split from the rest of the segment";
  EXPECT_EQ(p.reserved(), 20 * kMiB);
}

TEST(PytorchAllocator, LargeRequestsFrom10MiBAreRoundedUpTo2MiB) {
  Pytorch p;
  p.must_alloc(11 * kMiB);
  EXPECT_EQ(p.reserved(), 12 * kMiB);
  p.must_alloc(kMiB + 512);
  EXPECT_EQ(p.reserved(), 32 * kMiB) << "the 1 MiB left is not split off (not more than kSmallSize)";
}

TEST(PytorchAllocator, BestFitAmongTheCachedBlocksOfAStreamAndPool) {
  Pytorch p;
  const std::size_t a = p.must_alloc(4 * kMiB);  // one 20 MiB segment: a 4, b 3, c 6, d 2, 5 MiB left
  p.must_alloc(3 * kMiB);
  const std::size_t c = p.must_alloc(6 * kMiB);
  const std::size_t d = p.must_alloc(2 * kMiB);
  p.free(a);
  p.free(c);
  EXPECT_EQ(p.must_alloc(3 * kMiB + 512 * KiB), a) << "the 4 MiB hole, smallest of 4, 6 and 5 MiB";
  EXPECT_EQ(p.must_alloc(5 * kMiB), d + 2 * kMiB) << "the 5 MiB end before the 6 MiB hole";
  EXPECT_EQ(p.reserved(), 20 * kMiB);
}

TEST(PytorchAllocator, TakesTheLowestAddressAmongEqualBlocks) {
  Pytorch p;
  const std::size_t a = p.must_alloc(2 * kMiB);
  p.must_alloc(2 * kMiB);
  const std::size_t c = p.must_alloc(2 * kMiB);
  p.must_alloc(2 * kMiB);
  p.free(c);
  p.free(a);
  EXPECT_EQ(p.must_alloc(2 * kMiB), a);
}

TEST(PytorchAllocator, NeverReusesABlockOfAnotherStream) {
  Pytorch p;
  const std::size_t a = p.must_alloc(KiB, 0);
  p.free(a);
  const std::size_t b = p.must_alloc(KiB, 1);
  EXPECT_NE(b, a);
  EXPECT_EQ(p.reserved(), 4 * kMiB) << "stream 1 has a segment of its own";
  EXPECT_EQ(p.must_alloc(KiB, 0), a) << "stream 0's cached block";
}

TEST(PytorchAllocator, NeverServesASmallRequestFromTheLargePool) {
  Pytorch p;
  p.free(p.must_alloc(5 * kMiB));  // a cached 20 MiB segment
  p.must_alloc(KiB);
  EXPECT_EQ(p.reserved(), 22 * kMiB);
}

TEST(PytorchAllocator, SplitsASmallBlockWhenTheRestIsAtLeast512Bytes) {
  Pytorch p;
  const std::size_t a = p.must_alloc(kMiB);
  p.must_alloc(kMiB - 512);
  EXPECT_EQ(p.must_alloc(512), a + 2 * kMiB - 512) << "the last 512 B were split off";
  EXPECT_EQ(p.reserved(), 2 * kMiB);
}

TEST(PytorchAllocator, SplitsALargeBlockOnlyWhenTheRestIsOver1MiB) {
  {
    Pytorch p;
    const std::size_t a = p.must_alloc(19 * kMiB - 512);  // a 20 MiB segment, 1 MiB + 512 B left
    EXPECT_EQ(p.must_alloc(kMiB + 512), a + 19 * kMiB - 512) << "the rest was split off";
    EXPECT_EQ(p.reserved(), 20 * kMiB);
  }
  {
    Pytorch p;
    const std::size_t a = p.must_alloc(19 * kMiB);  // a 20 MiB segment, 1 MiB left: not split
    p.must_alloc(kMiB + 512);
    EXPECT_EQ(p.reserved(), 40 * kMiB);
    p.free(a);
    EXPECT_EQ(p.must_alloc(20 * kMiB), a) << "the block was the whole segment";
  }
}

TEST(PytorchAllocator, MaxSplitSizeKeepsOversizeBlocksFromSmallerRequests) {
  Pytorch p(1024 * kMiB, parse_pytorch_alloc_conf("max_split_size_mb:40"));
  p.free(p.must_alloc(50 * kMiB));
  p.must_alloc(30 * kMiB);
  EXPECT_EQ(p.reserved(), 80 * kMiB) << "the cached 50 MiB is not cut for 30 MiB";
}

TEST(PytorchAllocator, MaxSplitSizeServesLargerRequestsWithinTheSlackUnsplit) {
  Pytorch p(1024 * kMiB, parse_pytorch_alloc_conf("max_split_size_mb:40"));
  const std::size_t x = p.must_alloc(70 * kMiB);
  p.free(x);
  p.free(p.must_alloc(45 * kMiB));
  EXPECT_EQ(p.reserved(), 116 * kMiB) << "70 MiB is 20 MiB or more above 45: a new 46 MiB segment";
  EXPECT_EQ(p.must_alloc(52 * kMiB), x) << "70 MiB is within 20 MiB of 52";
  p.must_alloc(18 * kMiB);
  EXPECT_EQ(p.reserved(), 134 * kMiB) << "no 18 MiB rest of the 70 to serve it (and the 46 is oversize): a new segment";
}

TEST(PytorchAllocator, MaxSplitSizeFreesAnOversizeSegmentOfTheStreamBeforeTheRest) {
  Pytorch p(80 * kMiB, parse_pytorch_alloc_conf("max_split_size_mb:20"));
  p.free(p.must_alloc(KiB, 1));      // stream 1: a cached 2 MiB segment
  p.free(p.must_alloc(70 * kMiB));   // stream 0: a cached 70 MiB one, 8 MiB of the pool left
  p.must_alloc(45 * kMiB);           // 70 is too far above 45, 46 MiB do not fit: the 70 goes
  EXPECT_EQ(p.reserved(), 48 * kMiB) << "stream 1's segment stayed: release_available_cached_blocks";
}

TEST(PytorchAllocator, FreesCachedSegmentsAndRetriesBeforeFailing) {
  Pytorch p(22 * kMiB);
  p.free(p.must_alloc(KiB));       // a cached 2 MiB small segment
  p.free(p.must_alloc(5 * kMiB));  // a cached 20 MiB large one: the pool is full
  EXPECT_EQ(p.reserved(), 22 * kMiB);
  EXPECT_TRUE(p.alloc(KiB, 1).has_value()) << "stream 1 needs a segment: both cached ones go";
  EXPECT_EQ(p.reserved(), 2 * kMiB);
}

TEST(PytorchAllocator, FailsWhenNoCachedSegmentIsWhollyFree) {
  Pytorch p(22 * kMiB);
  p.must_alloc(KiB);
  p.must_alloc(5 * kMiB);
  const AllocRequest r{KiB, -1, Role::activation, false, 1};
  EXPECT_FALSE(p.allocator().allocate(r).has_value());
  EXPECT_EQ(p.reserved(), 22 * kMiB);
  EXPECT_EQ(p.allocator().lacking_bytes(r), 2 * kMiB) << "a whole small segment, with no room at all";
}

TEST(PytorchAllocator, ExpandableSegmentsGrowByPagesAtTheirEnd) {
  Pytorch p(1024 * kMiB, parse_pytorch_alloc_conf("expandable_segments:True"));
  p.must_alloc(KiB);
  EXPECT_EQ(p.reserved(), 2 * kMiB) << "one 2 MiB page of the small pool";
  const std::size_t a = p.must_alloc(kMiB + 512 * KiB);
  EXPECT_EQ(p.reserved(), 22 * kMiB) << "one 20 MiB page of the large pool";
  const std::size_t b = p.must_alloc(15 * kMiB);
  EXPECT_EQ(b, a + kMiB + 512 * KiB);
  EXPECT_EQ(p.reserved(), 22 * kMiB) << "from the page's 18.5 MiB left";
  const std::size_t c = p.must_alloc(10 * kMiB);
  EXPECT_EQ(c, b + 15 * kMiB) << "the 3.5 MiB left and a new page, one block";
  EXPECT_EQ(p.reserved(), 42 * kMiB);
  p.must_alloc(30 * kMiB);
  EXPECT_EQ(p.reserved(), 62 * kMiB) << "13.5 MiB left, 16.5 MiB more: one page";
}

TEST(PytorchAllocator, ExpandableSegmentsSplitLargeBlocksDownTo512Bytes) {
  Pytorch p(1024 * kMiB, parse_pytorch_alloc_conf("expandable_segments:True"));
  const std::size_t a = p.must_alloc(20 * kMiB - 512);
  EXPECT_EQ(p.must_alloc(2 * kMiB), a + 20 * kMiB - 512) << "the 512 B left of the page, and a new page after it";
  EXPECT_EQ(p.reserved(), 40 * kMiB);
}

TEST(PytorchAllocator, ExpandableSegmentsUnmapTheirFreeEndBeforeFailing) {
  Pytorch p(42 * kMiB, parse_pytorch_alloc_conf("expandable_segments:True"));
  p.free(p.must_alloc(30 * kMiB));  // two 20 MiB pages, free
  p.free(p.must_alloc(KiB));        // one 2 MiB page, free: the pool is full
  EXPECT_EQ(p.reserved(), 42 * kMiB);
  EXPECT_TRUE(p.alloc(KiB, 1).has_value()) << "stream 1's first page, once the free pages are unmapped";
  EXPECT_EQ(p.reserved(), 2 * kMiB);
}

TEST(PytorchAllocator, ReservedBytesFollowAHandComputedSequence) {
  using testing::alloc;
  using testing::release;
  const AllocTrace trace = {
      alloc(1, 100 * KiB),     //  2 MiB: a small segment
      alloc(2, 3 * kMiB),      // 22: a 20 MiB one, 17 MiB split off
      alloc(3, 18 * kMiB),     // 40: 17 MiB is too small; 18 MiB is a segment of its own
      alloc(4, 900 * KiB),     // 40: the small segment's rest
      release(2),              // 40: cached, merged into 20 MiB again
      alloc(5, 19 * kMiB),     // 40: all of it (1 MiB left is not split off)
      alloc(6, 2 * kMiB + 1),  // 60: nothing cached; a 20 MiB segment, 18 MiB - 512 B split off
      release(5),              // 60
      release(1),              // 60
      alloc(7, kMiB + 512),    // 60: the 18 MiB - 512 B rest, the best fit (not the 20 MiB)
      alloc(8, KiB),           // 60: 1's 100 KiB
  };
  const std::vector<std::size_t> expected_mib = {2, 22, 40, 40, 40, 40, 60, 60, 60, 60, 60};
  struct Reserved final : PoolObserver {
    std::vector<std::size_t> mib;
    void on_pool_event(const PoolEvent& e) override { mib.push_back(e.extent_bytes / kMiB); }
  } reserved;
  auto allocator = make_allocator("pytorch", 1024 * kMiB);
  const TraceReplay r = replay(trace, *allocator, kParkUntilNeeded, &reserved);
  ASSERT_TRUE(r.fits);
  EXPECT_EQ(reserved.mib, expected_mib);
  EXPECT_EQ(r.figures.footprint_bytes, 60 * kMiB);
}

TEST(PytorchAllocator, ReplayHandsEachEventsStreamToThePolicy) {
  using testing::alloc;
  using testing::release;
  AllocTrace trace = {alloc(1, KiB), release(1), alloc(2, KiB)};
  auto same = make_allocator("pytorch", 1024 * kMiB);
  EXPECT_EQ(replay(trace, *same).figures.footprint_bytes, 2 * kMiB);
  trace[2].stream = 1;
  auto other = make_allocator("pytorch", 1024 * kMiB);
  EXPECT_EQ(replay(trace, *other).figures.footprint_bytes, 4 * kMiB) << "stream 1 cannot reuse stream 0's block";
}

TEST(PytorchAllocator, ServesATraceInTotalAllocBytesAndThePoolSearchFindsItsSegment) {
  const AllocTrace trace = {testing::alloc(1, KiB)};
  EXPECT_EQ(total_alloc_bytes(trace), 2 * kMiB) << "pytorch's segment for it";
  auto allocator = make_allocator("pytorch", total_alloc_bytes(trace));
  EXPECT_TRUE(replay(trace, *allocator).fits);
  const PoolSearch s = search_pool_size(trace, "pytorch");
  EXPECT_EQ(s.pool_bytes, 2 * kMiB);
  EXPECT_EQ(s.restarts, 1) << "from the 1 KiB peak load straight to the segment it lacked";
}

// Mixed sizes on three streams in a pool that runs full (so cached
// segments are freed and requests fail), under each configuration: the
// replay loop throws on any block that overlaps another or leaves the pool.
TEST(PytorchAllocator, RandomSequencesOnSeveralStreamsNeverOverlap) {
  for (const char* conf : {"", "max_split_size_mb:24", "expandable_segments:True"})
    for (unsigned seed = 1; seed <= 8; ++seed) {
      SCOPED_TRACE(std::string(conf) + " seed " + std::to_string(seed));
      std::mt19937 rng(seed);
      AllocTrace trace;
      std::vector<std::int64_t> live;
      std::int64_t next = 0;
      for (int i = 0; i < 2000; ++i) {
        if (!live.empty() && rng() % 2 == 0) {
          const std::size_t k = rng() % live.size();
          trace.push_back(testing::release(live[k]));
          live.erase(live.begin() + static_cast<long>(k));
          continue;
        }
        const std::size_t bytes = rng() % 4 == 0 ? 1 + rng() % (30 * kMiB) : 1 + rng() % kMiB;
        TraceEvent e = testing::alloc(next, bytes);
        e.stream = static_cast<int>(rng() % 3);
        trace.push_back(e);
        live.push_back(next++);
      }
      struct Bounds final : PoolObserver {
        std::size_t pool = 0, events = 0;
        void on_pool_event(const PoolEvent& e) override {
          ++events;
          EXPECT_GE(e.extent_bytes, e.load_bytes) << "reserved holds what is allocated";
          EXPECT_LE(e.extent_bytes, pool);
        }
      } bounds;
      bounds.pool = 1024 * kMiB;
      auto allocator = make_pytorch_allocator(bounds.pool, parse_pytorch_alloc_conf(conf));
      TraceReplay r;
      EXPECT_NO_THROW(r = replay(trace, *allocator, kParkUntilNeeded, &bounds));
      EXPECT_GT(bounds.events, 500u) << "a long way in before the pool runs out (event " << r.failed_event << ")";
    }
}

TEST(PytorchAllocConf, DefaultsArePyTorchs) {
  const PytorchAllocConf conf = parse_pytorch_alloc_conf("");
  EXPECT_EQ(conf, PytorchAllocConf{});
  EXPECT_EQ(conf.max_split_size_bytes, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(conf.max_non_split_rounding_bytes, 20 * kMiB);
  EXPECT_FALSE(conf.expandable_segments);
}

TEST(PytorchAllocConf, ReadsPyTorchsSyntax) {
  const PytorchAllocConf conf =
      parse_pytorch_alloc_conf(" max_split_size_mb:128, expandable_segments:True,max_non_split_rounding_mb:64");
  EXPECT_EQ(conf.max_split_size_bytes, 128 * kMiB);
  EXPECT_EQ(conf.max_non_split_rounding_bytes, 64 * kMiB);
  EXPECT_TRUE(conf.expandable_segments);
  EXPECT_FALSE(parse_pytorch_alloc_conf("expandable_segments:False").expandable_segments);
  EXPECT_EQ(parse_pytorch_alloc_conf("backend:native,pinned_use_cuda_host_register:True"), PytorchAllocConf{})
      << "options that place nothing on the device are accepted";
}

TEST(PytorchAllocConf, RefusesWhatItCannotHonourNamingTheOption) {
  auto message = [](const char* text) {
    try {
      parse_pytorch_alloc_conf(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("max_split_size:128").find("unknown option 'max_split_size'"), std::string::npos);
  EXPECT_NE(message("max_split_size_mb:19").find("too small, must be >= 20"), std::string::npos);
  EXPECT_NE(message("max_split_size_mb:lots").find("whole number of MiB"), std::string::npos);
  EXPECT_NE(message("expandable_segments:true").find("True or False"), std::string::npos);
  EXPECT_NE(message("expandable_segments").find("no value"), std::string::npos);
  EXPECT_NE(message("garbage_collection_threshold:0.6").find("not modelled"), std::string::npos);
  EXPECT_NE(message("backend:cudaMallocAsync").find("cudaMallocAsync"), std::string::npos);
}

}  // namespace
}  // namespace tidepool
