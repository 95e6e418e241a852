// The ranks of a data-parallel run on the sim device: one process
// simulates rank 0 of `size` symmetric ranks.
//
// The sim device computes no values and times an all-reduce by the
// communicator's size (SimDevice::all_reduce, engine/device/sim/
// sim_network.h), so N simulated GPUs need no N processes: every rank would
// run the same schedule on the same performance model, and rank 0's
// timeline is each one's. What the host calls return is what N ranks that
// all hold rank 0's values would get, so a caller that averages a figure
// over the ranks (sum, then divide by size()) reads rank 0's figure back:
//
//   SimDevice device{PerfModel(profile), {.gbit_per_s = 10}};
//   SimulatedRanks ranks(8);
//   Trainer trainer(device, net, {.batch = 54, .memory = {.ranks = 8}, .comm = &ranks});
//
// On a device that computes values (cpu) the same holds for gradients: the
// sum is size() times rank 0's and the executor's average divides it back.
#pragma once

#include "engine/comm/communicator.h"

namespace tidepool {

class SimulatedRanks final : public Communicator {
 public:
  // Throws std::invalid_argument for fewer than one rank.
  explicit SimulatedRanks(int size);

  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::string transport() const override { return "simulated"; }

  // size() equal terms: `data` times size().
  void all_reduce_sum(float* data, std::size_t count) override;
  void all_reduce_sum(double* data, std::size_t count) override;
  std::int64_t all_reduce_max(std::int64_t value) override { return value; }
  // Every rank already holds the root's bytes; only the root is checked.
  void broadcast(void* data, std::size_t bytes, int root) override;
  // `value`, size() times.
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override;
  // The other ranks are not there to talk to: send() throws CommError,
  // and no message ever arrives.
  void send(int to, int tag, const std::vector<unsigned char>& bytes) override;
  std::optional<Message> try_receive(int) override { return std::nullopt; }
  void abort(int) override {}  // one process: its own error ends it

 private:
  int size_;
};

}  // namespace tidepool
