// Properties every policy must keep, run for each name allocator_names()
// lists, so a new policy is covered the moment it is registered.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/memory/allocator.h"
#include "engine/memory/allocators/free_list.h"

namespace tidepool {
namespace {

class EveryAllocator : public ::testing::TestWithParam<std::string> {};

// pytorch claims whole segments (2 MiB for a request of up to 1 MiB, 20
// MiB for one up to 10 MiB), so it shows in pools of its segments' size
// what the others show in a few KiB.
bool claims_segments(const std::string& name) { return name == "pytorch"; }

TEST_P(EveryAllocator, RandomSequencesNeverOverlapAndStayInsidePool) {
  const std::size_t kPool = claims_segments(GetParam()) ? std::size_t{64} << 20 : std::size_t{1} << 20;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    auto alloc = make_allocator(GetParam(), kPool);
    std::mt19937 rng(seed);
    std::map<std::size_t, std::size_t> live;  // offset -> rounded bytes
    std::size_t load = 0;
    for (int i = 0; i < 2000; ++i) {
      const bool do_free = !live.empty() && (rng() % 3 == 0);
      if (do_free) {
        auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
        alloc->free(it->first);
        load -= it->second;
        live.erase(it);
      } else {
        const std::size_t bytes = 1 + rng() % 20000;
        auto off = alloc->allocate({bytes, i, Role::activation, (rng() & 1) != 0});
        if (!off) continue;  // full is allowed; overlap is not
        const std::size_t size = round_up(bytes);
        ASSERT_EQ(*off % kAllocGranularity, 0u);
        ASSERT_LE(*off + size, kPool) << "block runs past the pool";
        auto next = live.lower_bound(*off);
        if (next != live.end()) {
          ASSERT_LE(*off + size, next->first) << "overlaps the next block";
        }
        if (next != live.begin()) {
          auto prev = std::prev(next);
          ASSERT_LE(prev->first + prev->second, *off) << "overlaps the previous block";
        }
        live.emplace(*off, size);
        load += size;
      }
      const PoolStats st = alloc->stats();
      ASSERT_EQ(st.load_bytes, load);
      ASSERT_LE(st.extent_bytes, kPool);
      ASSERT_GE(st.extent_bytes, st.load_bytes);
    }
    for (auto [off, size] : live) alloc->free(off);
    // A free restores the space: the whole pool is one block again.
    const PoolStats st = alloc->stats();
    EXPECT_EQ(st.load_bytes, 0u);
    // (pytorch keeps its freed segments cached, which is its point, and
    // gives them back when a request needs the room: the allocate below.)
    if (!claims_segments(GetParam())) {
      EXPECT_EQ(st.largest_free_block_bytes, kPool);
    }
    EXPECT_TRUE(alloc->allocate({kPool, -1, Role::activation, false}).has_value());
  }
}

TEST_P(EveryAllocator, FreeOfUnknownOffsetThrows) {
  auto alloc = make_allocator(GetParam(), 4096);
  EXPECT_THROW(alloc->free(256), std::logic_error);
}

TEST_P(EveryAllocator, RefusesWhatDoesNotFit) {
  const std::size_t pool = claims_segments(GetParam()) ? std::size_t{20} << 20 : 4096;
  auto alloc = make_allocator(GetParam(), pool);
  EXPECT_FALSE(alloc->allocate({pool + 1, -1, Role::activation, false}).has_value());
  EXPECT_TRUE(alloc->allocate({pool, -1, Role::activation, false}).has_value());
  EXPECT_FALSE(alloc->allocate({1, -1, Role::activation, false}).has_value());
}

INSTANTIATE_TEST_SUITE_P(Allocators, EveryAllocator, ::testing::ValuesIn(allocator_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(Allocator, UnknownHeuristicListsValidNames) {
  try {
    make_allocator("worst-fit", 1024);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("best-fit"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("worst-fit"), std::string::npos);
  }
}

TEST(BestFit, TakesTheSmallestHoleThatFits) {
  auto a = make_allocator("best-fit", 10 * 256);
  auto b0 = *a->allocate({256 * 3, 0});  // [0, 3)
  auto b1 = *a->allocate({256 * 1, 1});  // [3, 4)
  auto b2 = *a->allocate({256 * 2, 2});  // [4, 6)
  auto b3 = *a->allocate({256 * 1, 3});  // [6, 7)
  a->free(b0);                           // hole of 3 at 0
  a->free(b2);                           // hole of 2 at 4; tail hole of 3 at 7
  EXPECT_EQ(*a->allocate({256 * 2, 4}), b2) << "the 2-unit hole fits exactly";
  EXPECT_EQ(*a->allocate({256 * 3, 5}), b0) << "lowest of the equal 3-unit holes";
  (void)b1, (void)b3;
}

TEST(FreeList, CoalescesNeighbours) {
  FreeList f(1000);
  EXPECT_EQ(*f.take_best_fit(100), 0u);
  EXPECT_EQ(*f.take_best_fit(100), 100u);
  EXPECT_EQ(*f.take_best_fit(100), 200u);
  f.give_back(0, 100);
  f.give_back(200, 100);
  EXPECT_EQ(f.count(), 2u);  // [0,100) and [200,1000)
  f.give_back(100, 100);
  EXPECT_EQ(f.count(), 1u);
  EXPECT_EQ(f.largest(), 1000u);
  EXPECT_THROW(f.give_back(50, 10), std::logic_error) << "double free is caught";
}

TEST(FreeList, HighestTakesFromTheTop) {
  FreeList f(1000);
  EXPECT_EQ(*f.take_highest(100), 900u);
  EXPECT_EQ(*f.take_first_fit(100), 0u);
  EXPECT_EQ(f.largest(), 800u);
}

}  // namespace
}  // namespace tidepool

namespace tidepool {
namespace {

TEST(FreeList, TakesAnExactRangeOnlyInsideOneFreeBlock) {
  FreeList f(1000);
  EXPECT_TRUE(f.take_at(300, 100));  // splits [0, 1000) into [0, 300) and [400, 1000)
  EXPECT_EQ(f.count(), 2u);
  EXPECT_EQ(f.largest(), 600u);
  EXPECT_FALSE(f.take_at(250, 100)) << "[250, 350) crosses the taken [300, 400)";
  EXPECT_FALSE(f.take_at(350, 10)) << "inside the taken range";
  EXPECT_TRUE(f.take_at(0, 300)) << "a whole free block";
  EXPECT_EQ(f.count(), 1u);
  EXPECT_TRUE(f.take_at(900, 100)) << "the top of a free block";
  EXPECT_EQ(f.largest(), 500u);
  f.give_back(300, 100);
  EXPECT_EQ(f.largest(), 600u) << "[300, 400) merged with [400, 900)";
}

TEST(FreeList, NeverMergesAcrossAFence) {
  FreeList f(12, /*all_free=*/false);  // nothing free: a policy that claims pools as it grows
  EXPECT_EQ(f.count(), 0u);
  EXPECT_EQ(f.largest(), 0u);
  EXPECT_FALSE(f.take_best_fit(1).has_value());
  f.add_fence(4);
  f.add_fence(8);
  EXPECT_THROW(f.add_fence(6), std::logic_error) << "fences go up in order";
  for (std::size_t at : {0u, 4u, 8u}) f.give_back(at, 4);
  EXPECT_EQ(f.count(), 3u) << "three pools of 4, side by side, stay three";
  EXPECT_EQ(f.largest(), 4u);
  EXPECT_FALSE(f.take_best_fit(5).has_value());
  EXPECT_EQ(*f.take_best_fit(2), 0u);
  f.give_back(0, 2);
  EXPECT_EQ(f.count(), 3u) << "merged inside its pool";
}

TEST(FreeList, TheLargestBlockFollowsEveryCutAndMerge) {
  // Against a scan of the blocks after each change: the cached largest
  // block is recomputed only when the largest itself was cut.
  FreeList f(1 << 16);
  std::map<std::size_t, std::size_t> taken;  // offset -> bytes
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    if (!taken.empty() && rng() % 2 == 0) {
      auto it = std::next(taken.begin(), static_cast<long>(rng() % taken.size()));
      f.give_back(it->first, it->second);
      taken.erase(it);
    } else {
      const std::size_t bytes = 1 + rng() % 2048;
      const auto at = rng() % 3 == 0 ? f.take_highest(bytes) : f.take_best_fit(bytes);
      if (at) taken.emplace(*at, bytes);
    }
    std::size_t largest = 0, from = 0;
    for (const auto& [offset, bytes] : taken) {
      largest = std::max(largest, offset - from);
      from = offset + bytes;
    }
    largest = std::max(largest, (std::size_t{1} << 16) - from);
    ASSERT_EQ(f.largest(), largest) << "after change " << i;
  }
}

TEST(LiveBlocks, KeepsTheLoadTheExtentAndEachBlocksTag) {
  LiveBlocks live;
  live.add(512, 256, 7);
  live.add(0, 256);
  EXPECT_EQ(live.load_bytes(), 512u);
  EXPECT_EQ(live.extent_bytes(), 768u);
  ASSERT_NE(live.find(512), nullptr);
  EXPECT_EQ(live.find(512)->tag, 7);
  EXPECT_EQ(live.find(256), nullptr);
  EXPECT_THROW(live.remove(256), std::logic_error);
  EXPECT_EQ(live.remove(512).tag, 7);
  EXPECT_EQ(live.extent_bytes(), 256u);
  EXPECT_EQ(live.load_bytes(), 256u);
}

}  // namespace
}  // namespace tidepool
