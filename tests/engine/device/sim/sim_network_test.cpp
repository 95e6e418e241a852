// The simulated network: the ring all-reduce's time, and the sim device
// putting it on the comm stream's clock without touching a value.
#include "engine/device/sim/sim_network.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "engine/comm/simulated_ranks.h"
#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"

namespace tidepool {
namespace {

TEST(SimNetwork, ARingAllReduceTakesTwiceNMinusOneStepsOfBytesOverN) {
  // 100 MB over 4 ranks at 10 Gbit/s (1.25 GB/s) and 20 µs: 6 steps of
  // 25 MB, 20 ms + 20 µs each.
  EXPECT_DOUBLE_EQ(ring_all_reduce_us(100'000'000, 4, {.gbit_per_s = 10, .latency_us = 20}), 6 * 20'020.0);
  // Twice the ranks: nearly the same bandwidth term (2 (N-1)/N of the
  // bytes), twice and more the latency's.
  EXPECT_DOUBLE_EQ(ring_all_reduce_us(80'000'000, 8, {.gbit_per_s = 40, .latency_us = 5}), 14 * (5 + 2'000.0));
  EXPECT_EQ(ring_all_reduce_us(100'000'000, 1, {}), 0) << "one rank has nothing to exchange";
  EXPECT_DOUBLE_EQ(ring_all_reduce_us(0, 2, {.latency_us = 7}), 2 * 7.0);
  EXPECT_THROW(ring_all_reduce_us(1, 0, {}), std::invalid_argument);
  EXPECT_THROW(ring_all_reduce_us(1, 2, {.gbit_per_s = 0}), std::invalid_argument);
}

TEST(SimNetwork, TheSimDeviceRunsAnAllReduceOnTheCommStreamsClockAndLeavesTheValues) {
  const SimNetwork network{.gbit_per_s = 10, .latency_us = 20};
  SimDevice device{PerfModel(*specification_profile("m40")), network};
  SimulatedRanks ranks(8);
  std::vector<float> gradients(1'000'000, 0.5f);
  auto start = device.record(Stream::comm);
  device.all_reduce(Stream::comm, gradients.data(), gradients.size(), ranks);
  device.all_reduce(Stream::comm, gradients.data(), 1000, ranks);
  auto end = device.record(Stream::comm);
  EXPECT_DOUBLE_EQ(device.elapsed_us(*start, *end),
                   ring_all_reduce_us(4'000'000, 8, network) + ring_all_reduce_us(4'000, 8, network))
      << "one after the other on the stream";
  EXPECT_EQ(device.time_us(*device.record(Stream::compute)), 0) << "the other streams go on";
  EXPECT_EQ(gradients, std::vector<float>(1'000'000, 0.5f)) << "no values: nothing is summed";
  EXPECT_EQ(device.network().gbit_per_s, 10);
  EXPECT_THROW(SimDevice(PerfModel(*specification_profile("m40")), {.gbit_per_s = -1}), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
