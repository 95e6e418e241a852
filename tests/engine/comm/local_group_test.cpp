#include "engine/comm/local_group.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tidepool {
namespace {

// Runs `body(rank)` on one thread per rank.
template <typename Body>
void on_ranks(LocalGroup& group, Body body) {
  std::vector<std::jthread> threads;
  for (int r = 0; r < group.size(); ++r) threads.emplace_back([&, r] { body(group.rank(r)); });
}

TEST(LocalGroup, SumsAreTheSameBitsOnEveryRank) {
  LocalGroup group(3);
  std::vector<std::vector<float>> data = {{1e8f, 1.0f, 0.5f}, {-1e8f, 2.0f, 0.25f}, {1.0f, 3.0f, 0.125f}};
  on_ranks(group, [&](Communicator& c) {
    for (int i = 0; i < 4; ++i) c.all_reduce_sum(data[static_cast<std::size_t>(c.rank())].data(), 3);  // again and again
  });
  EXPECT_EQ(data[0], data[1]);
  EXPECT_EQ(data[0], data[2]);
}

TEST(LocalGroup, BroadcastsGathersAndAgreesOnTheLargest) {
  LocalGroup group(2);
  std::vector<std::vector<std::int64_t>> got(2);
  std::vector<std::vector<std::uint64_t>> gathered(2);
  on_ranks(group, [&](Communicator& c) {
    std::int64_t value = c.rank() == 0 ? 42 : 7;
    c.broadcast(&value, sizeof value, 0);
    got[static_cast<std::size_t>(c.rank())].push_back(value);
    got[static_cast<std::size_t>(c.rank())].push_back(c.all_reduce_max(c.rank() * 10));
    gathered[static_cast<std::size_t>(c.rank())] = c.all_gather(100 + static_cast<std::uint64_t>(c.rank()));
  });
  EXPECT_EQ(got[0], (std::vector<std::int64_t>{42, 10}));
  EXPECT_EQ(got[1], (std::vector<std::int64_t>{42, 10}));
  EXPECT_EQ(gathered[1], (std::vector<std::uint64_t>{100, 101}));
}

TEST(LocalGroup, MessagesArriveInOrderByTagWithoutWaiting) {
  LocalGroup group(3);
  Communicator& zero = group.rank(0);
  EXPECT_FALSE(zero.try_receive(5)) << "nothing sent: none, at once";
  group.rank(1).send(0, 5, {1});
  group.rank(2).send(0, 6, {2});
  group.rank(1).send(0, 5, {3, 4});
  const auto first = zero.try_receive(5), second = zero.try_receive(5);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->from, 1);
  EXPECT_EQ(first->bytes, std::vector<unsigned char>{1});
  EXPECT_EQ(second->bytes, (std::vector<unsigned char>{3, 4})) << "in the order sent";
  EXPECT_FALSE(zero.try_receive(5));
  const auto other = zero.try_receive(6);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->from, 2);
  EXPECT_FALSE(group.rank(1).try_receive(5)) << "each rank has its own mail";
  EXPECT_THROW(zero.send(3, 5, {}), std::invalid_argument);
}

TEST(LocalGroup, RefusesAnEmptyGroupAndRanksOutsideIt) {
  EXPECT_THROW(LocalGroup(0), std::invalid_argument);
  LocalGroup group(2);
  EXPECT_THROW(group.rank(2), std::out_of_range);
}

}  // namespace
}  // namespace tidepool
