// vDNN++'s asynchronous release without timing: a block whose copy to the
// host may still run is parked (taken, but dead), given back oldest first
// when the pool needs the room, or when its own tensor comes back.
#include <gtest/gtest.h>

#include "engine/memory/parking.h"

namespace tidepool {
namespace {

constexpr std::size_t U = 1 << 20;

AllocRequest unit(int tensor, std::size_t units = 1) { return {units * U, tensor, Role::activation, false}; }

std::vector<std::size_t> offsets(const std::vector<Parking::Parked>& blocks) {
  std::vector<std::size_t> out;
  for (const auto& b : blocks) out.push_back(b.offset);
  return out;
}

TEST(Parking, AParkedBlockIsNotReusedWhileThePoolHasRoom) {
  auto pool = make_allocator("best-fit", 4 * U);
  Parking r(*pool);
  const auto a = r.allocate(0, unit(0));
  const auto b = r.allocate(1, unit(1));
  ASSERT_TRUE(a && b);
  r.free_after_copy(0, *a, U);
  EXPECT_EQ(r.parked_bytes(), U);
  EXPECT_EQ(r.stats().load_bytes, U) << "a parked block is dead: out of the load";
  EXPECT_EQ(r.stats().extent_bytes, 2 * U) << "...but its bytes are taken";
  // Best fit alone would put c into a's hole; parked, the hole is not free.
  const auto c = r.allocate(2, unit(2));
  ASSERT_TRUE(c);
  EXPECT_NE(*c, *a);
  EXPECT_TRUE(r.released().empty());
  EXPECT_EQ(r.parked_blocks(), 1u);
}

TEST(Parking, WithoutRoomTheOldestParkedBlockGoesBackFirst) {
  auto pool = make_allocator("best-fit", 4 * U);
  Parking r(*pool);
  std::size_t at[4];
  for (int t = 0; t < 4; ++t) at[t] = *r.allocate(t, unit(t));
  r.free_after_copy(2, at[2], U);  // the older copy
  r.free_after_copy(0, at[0], U);
  const auto e = r.allocate(4, unit(4));
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, at[2]) << "the offload stream copies in order: the oldest copy finishes first";
  EXPECT_EQ(offsets(r.released()), std::vector<std::size_t>{at[2]});
  EXPECT_EQ(r.parked_blocks(), 1u);
  // Two units wanted, one parked unit left: it goes back and still nothing fits.
  EXPECT_FALSE(r.allocate(5, unit(5, 2)).has_value());
  EXPECT_EQ(r.parked_blocks(), 0u) << "the pool was refused only with every parked block given back";
  EXPECT_EQ(offsets(r.released()), std::vector<std::size_t>{at[0]});
}

TEST(Parking, ATensorAllocatedAgainReclaimsItsStillParkedBlock) {
  auto pool = make_allocator("best-fit", 4 * U);
  Parking r(*pool);
  const auto a = r.allocate(7, unit(7));
  ASSERT_TRUE(a);
  EXPECT_FALSE(r.reclaimed());
  const auto b = r.allocate(8, unit(8));
  r.free(*b);  // a hole below... best fit alone would pick either
  r.free_after_copy(7, *a, U);
  // Prefetched for backward while still parked: the same block, contents
  // and all, without going through the pool.
  const auto back = r.allocate(7, unit(7));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, *a);
  EXPECT_TRUE(r.reclaimed());
  EXPECT_TRUE(r.released().empty());
  EXPECT_EQ(r.parked_bytes(), 0u);
  EXPECT_EQ(r.stats().load_bytes, U) << "live again";
  // Given back in the meantime, the block is gone: an ordinary allocation.
  r.free_after_copy(7, *back, U);
  ASSERT_TRUE(r.allocate(9, unit(9, 4)));  // the whole pool: the parked unit goes back
  EXPECT_EQ(r.parked_blocks(), 0u);
  EXPECT_FALSE(r.allocate(7, unit(7)).has_value()) << "the pool is full";
  EXPECT_FALSE(r.reclaimed());
}

TEST(Parking, AnIdAllocatedAgainWithAnotherSizeGivesItsBlockBack) {
  auto pool = make_allocator("best-fit", 4 * U);
  Parking r(*pool);
  const auto a = r.allocate(7, unit(7));
  r.free_after_copy(7, *a, U);
  const auto bigger = r.allocate(7, unit(7, 2));
  ASSERT_TRUE(bigger);
  EXPECT_FALSE(r.reclaimed());
  EXPECT_EQ(offsets(r.released()), std::vector<std::size_t>{*a});
  EXPECT_EQ(r.parked_bytes(), 0u);
}

TEST(Parking, AHorizonKeepsOnlyTheNewestBlocksParked) {
  auto pool = make_allocator("best-fit", 8 * U);
  Parking r(*pool, /*horizon=*/2);
  std::size_t at[3];
  for (int t = 0; t < 3; ++t) at[t] = *r.allocate(t, unit(t));
  r.free_after_copy(0, at[0], U);
  r.free_after_copy(1, at[1], U);
  EXPECT_TRUE(r.released().empty());
  EXPECT_EQ(r.parked_blocks(), 2u);
  r.free_after_copy(2, at[2], U);  // a third: the oldest goes back
  EXPECT_EQ(offsets(r.released()), std::vector<std::size_t>{at[0]});
  EXPECT_EQ(r.parked_blocks(), 2u);
  EXPECT_EQ(r.parked_bytes(), 2 * U);
  EXPECT_EQ(*r.allocate(3, unit(3)), at[0]) << "best fit takes the given-back block";
  EXPECT_FALSE(r.reclaimed());
  EXPECT_EQ(*r.allocate(1, unit(1)), at[1]) << "still parked: reclaimed";
  EXPECT_TRUE(r.reclaimed());

  Parking none(*pool, /*horizon=*/0);  // parks nothing
  none.free_after_copy(3, at[0], U);
  EXPECT_EQ(none.parked_blocks(), 0u);
  EXPECT_EQ(offsets(none.released()), std::vector<std::size_t>{at[0]});
}

TEST(Parking, AnOrdinaryFreeIsImmediate) {
  auto pool = make_allocator("first-fit", 2 * U);
  Parking r(*pool);
  const auto a = r.allocate(0, unit(0));
  r.free(*a);
  EXPECT_EQ(r.stats().load_bytes, 0u);
  EXPECT_EQ(*r.allocate(1, unit(1)), *a);
  EXPECT_TRUE(r.released().empty());
}

}  // namespace
}  // namespace tidepool
