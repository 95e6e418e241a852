// The ranks `mpirun` starts, over Open MPI: one process per rank, on one
// machine or several (`mpirun -np 2 tidepool --batch ...`,
// `mpirun -H a,b ...`).
//
// Built where CMake finds MPI (Debian's libopenmpi-dev); without it the
// class still exists and its constructor says how to get it, so a build
// without MPI trains on one process and refuses mpirun's clearly.
//
// MPI is initialised with MPI_THREAD_MULTIPLE: the all-reduces run on the
// device's comm stream (a worker thread on the cpu device) while the
// run's own thread may agree on figures between iterations. Errors return
// instead of aborting (MPI_ERRORS_RETURN) and become CommError.
#pragma once

#include <memory>

#include "engine/comm/communicator.h"

namespace tidepool {

class MpiCommunicator final : public Communicator {
 public:
  // Whether this process was started by mpirun (Open MPI's or another's
  // PMI environment): only then is MPI initialised at all.
  static bool launched_by_mpirun();
  // This process's rank among the ranks on its machine, as the launcher
  // says in the environment (Open MPI, MPICH/Hydra, Slurm); 0 when none
  // does: the GPU a rank opens (app/device_factory.cpp).
  static int local_rank();
  // Whether this build has MPI.
  static bool available();

  // MPI_Init_thread; throws CommError where MPI is missing or refuses.
  MpiCommunicator();
  ~MpiCommunicator() override;  // MPI_Finalize
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string transport() const override { return "mpi"; }
  void all_reduce_sum(float* data, std::size_t count) override;
  void all_reduce_sum(double* data, std::size_t count) override;
  std::int64_t all_reduce_max(std::int64_t value) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override;
  void send(int to, int tag, const std::vector<unsigned char>& bytes) override;
  std::optional<Message> try_receive(int tag) override;
  [[noreturn]] void abort(int status) override;

 private:
  int rank_ = 0, size_ = 1;
  struct Messages;  // the duplicate communicator the messages travel on (mpi.h stays in the .cpp)
  std::unique_ptr<Messages> messages_;
};

}  // namespace tidepool
