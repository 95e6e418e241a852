#include "engine/device/sim/sim_network.h"

#include <stdexcept>
#include <string>

namespace tidepool {

double ring_all_reduce_us(std::size_t bytes, int ranks, const SimNetwork& network) {
  if (ranks < 1) throw std::invalid_argument("an all-reduce over " + std::to_string(ranks) + " ranks");
  if (!(network.gbit_per_s > 0))
    throw std::invalid_argument("a network of " + std::to_string(network.gbit_per_s) + " Gbit/s moves nothing");
  if (ranks == 1) return 0;
  const double n = ranks;
  const double bytes_per_us = network.gbit_per_s * 1e9 / 8 / 1e6;
  return 2 * (n - 1) * (network.latency_us + static_cast<double>(bytes) / n / bytes_per_us);
}

}  // namespace tidepool
