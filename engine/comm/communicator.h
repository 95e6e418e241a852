// The ranks of a data-parallel run and what they say to each other.
//
// Each rank trains on its share of every global batch; after backward the
// parameter gradients are summed over the ranks (in buckets, on the
// device's comm stream: Device::all_reduce) and averaged, so every rank
// makes the same update and the parameters stay identical. Outside the
// iterations the ranks agree on figures (losses, counts, checksums) and
// rank 0 hands out what only it read (a checkpoint) with the host calls
// below.
//
// Implementations: MpiCommunicator (engine/comm/mpi_communicator.h: the
// processes `mpirun` starts), LocalGroup (engine/comm/local_group.h:
// threads of one process, for tests), SimulatedRanks
// (engine/comm/simulated_ranks.h: rank 0 of N on the sim device) and none at
// all for one process.
//
// Every rank makes the same collective calls in the same order, as MPI
// requires. A call fails with CommError when a peer is gone; the run then stops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tidepool {

// A point-to-point message (Communicator::send, try_receive).
struct Message {
  int from = 0;
  std::vector<unsigned char> bytes;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi", "local", "simulated": what carries the bytes, for messages and summaries.
  virtual std::string transport() const = 0;

  // `data` summed over the ranks, in place, on every rank (the same bits
  // everywhere). Host memory; blocks until done. Safe to call from a
  // stream's worker thread while the thread that owns the run waits.
  virtual void all_reduce_sum(float* data, std::size_t count) = 0;
  virtual void all_reduce_sum(double* data, std::size_t count) = 0;
  // The largest of each rank's value.
  virtual std::int64_t all_reduce_max(std::int64_t value) = 0;
  // `bytes` of rank `root`'s `data` copied into every other rank's.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  // Each rank's 64-bit value, in rank order, on every rank.
  virtual std::vector<std::uint64_t> all_gather(std::uint64_t value) = 0;
  // Point-to-point messages beside the collectives, for what must never
  // hold training up: the window's turns and the events other ranks
  // forward to it (app/window_ranks.h, engine/observe/rank_events.h).
  // They travel apart from the collectives (MPI: a duplicate of the world
  // communicator), so any thread may use them while training all-reduces.
  // Messages from one rank with one tag arrive in the order they were sent.
  //
  // send() returns once `bytes` may be reused; a large message may wait
  // for the receiver to take it, so send from a thread that can wait.
  virtual void send(int to, int tag, const std::vector<unsigned char>& bytes) = 0;
  // The oldest message with `tag` from any rank that has arrived, or none;
  // never blocks.
  virtual std::optional<Message> try_receive(int tag) = 0;

  // Ends every rank's process after an error on this one, with `status`
  // (MPI_Abort). Does not return where it can stop them; a group of
  // threads (LocalGroup) cannot, and returns.
  virtual void abort(int status) = 0;
};

// A peer that is gone or a transport that failed.
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tidepool
