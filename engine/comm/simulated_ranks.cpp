#include "engine/comm/simulated_ranks.h"

#include <stdexcept>
#include <string>

namespace tidepool {

SimulatedRanks::SimulatedRanks(int size) : size_(size) {
  if (size < 1) throw std::invalid_argument("simulated ranks need at least one rank, not " + std::to_string(size));
}

void SimulatedRanks::all_reduce_sum(float* data, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) data[i] *= static_cast<float>(size_);
}

void SimulatedRanks::all_reduce_sum(double* data, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) data[i] *= size_;
}

void SimulatedRanks::broadcast(void*, std::size_t, int root) {
  if (root < 0 || root >= size_)
    throw std::invalid_argument("broadcast from rank " + std::to_string(root) + " of " + std::to_string(size_));
}

std::vector<std::uint64_t> SimulatedRanks::all_gather(std::uint64_t value) {
  return std::vector<std::uint64_t>(static_cast<std::size_t>(size_), value);
}

void SimulatedRanks::send(int to, int, const std::vector<unsigned char>&) {
  throw CommError("rank " + std::to_string(to) + " of " + std::to_string(size_) +
                  " is simulated: it is not there to send a message to");
}

}  // namespace tidepool
