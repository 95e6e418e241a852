// SimulatedRanks: rank 0 of N symmetric ranks in one process. Its host
// calls answer what N ranks holding rank 0's values would get, so a run
// that averages over the ranks takes the step one rank takes.
#include "engine/comm/simulated_ranks.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "engine/device/cpu/cpu_device.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

TEST(SimulatedRanks, HostCallsAnswerWhatSymmetricRanksWouldGet) {
  SimulatedRanks ranks(8);
  EXPECT_EQ(ranks.rank(), 0);
  EXPECT_EQ(ranks.size(), 8);
  EXPECT_EQ(ranks.transport(), "simulated");
  std::vector<float> f = {1.5f, -2.0f};
  ranks.all_reduce_sum(f.data(), f.size());
  EXPECT_EQ(f, (std::vector<float>{12.0f, -16.0f}));
  std::vector<double> d = {0.25};
  ranks.all_reduce_sum(d.data(), d.size());
  EXPECT_EQ(d[0], 2.0);
  EXPECT_EQ(ranks.all_reduce_max(-7), -7);
  EXPECT_EQ(ranks.all_gather(42), std::vector<std::uint64_t>(8, 42));
  std::vector<float> mine = {3.0f};
  ranks.broadcast(mine.data(), sizeof(float), 7);
  EXPECT_EQ(mine[0], 3.0f) << "every rank already holds the root's values";
  EXPECT_THROW(ranks.broadcast(mine.data(), sizeof(float), 8), std::invalid_argument);
  EXPECT_THROW(SimulatedRanks(0), std::invalid_argument);
}

// On a device that computes values the gradients are summed over four
// equal ranks (times 4) and averaged (times 1/4, exact for a power of two):
// the parameters one rank reaches, bit for bit, through the buckets.
TEST(SimulatedRanks, FourSymmetricRanksTakeTheStepOfOneRankBitForBit) {
  const Network net = testing::residual_net(true, false);
  auto train = [&](int ranks) {
    CpuDevice device;
    SimulatedRanks comm(ranks);
    Trainer trainer(device, net, {.batch = 8, .memory = {.ranks = ranks, .bucket_bytes = 512}, .seed = 3, .comm = &comm});
    EXPECT_EQ(trainer.train_schedule().buckets.empty(), ranks == 1);
    for (unsigned i = 0; i < 3; ++i) {
      const testing::Batch b = testing::quadrant_batch(8, 20 + i);
      trainer.train_step(b.images.data(), b.labels.data());
    }
    return trainer.param_checksum();
  };
  EXPECT_EQ(train(4), train(1));
}

}  // namespace
}  // namespace tidepool
