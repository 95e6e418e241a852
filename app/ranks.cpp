#include "app/ranks.h"

#include <cstdio>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

#include "engine/comm/mpi_communicator.h"

namespace tidepool::app {

std::unique_ptr<Communicator> join_ranks() {
  if (!MpiCommunicator::launched_by_mpirun()) return nullptr;
  auto mpi = std::make_unique<MpiCommunicator>();
  if (mpi->size() == 1) return nullptr;  // one rank: MPI stays initialised, unused
  return mpi;
}

Checkpoint load_checkpoint_on_ranks(const std::filesystem::path& file, Communicator* comm) {
  if (!comm) return load_checkpoint(file);
  // Rank 0's bytes, or its reason for having none (a negative length).
  std::vector<char> bytes;
  std::int64_t length = 0;
  if (comm->rank() == 0) {
    std::ifstream in(file, std::ios::binary);
    if (in) {
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      length = static_cast<std::int64_t>(bytes.size());
    } else {
      length = -1;
    }
  }
  comm->broadcast(&length, sizeof length, 0);
  if (length < 0) throw CheckpointError("no checkpoint at " + file.string() + " (where rank 0 looked)");
  bytes.resize(static_cast<std::size_t>(length));
  comm->broadcast(bytes.data(), bytes.size(), 0);
  return parse_checkpoint(bytes, file.string());
}

std::string rank_prefix(const Communicator* comm) {
  if (!comm) return "";
  return "rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) + ": ";
}

void stop_all_ranks(Communicator* comm, int status) {
  if (comm) comm->abort(status);
}

int report_failure(const std::exception& e, Communicator* comm) {
  std::fprintf(stderr, "\ntidepool: %serror: %s\n", rank_prefix(comm).c_str(), e.what());
  std::fflush(stderr);
  stop_all_ranks(comm, 1);  // the others may be waiting for this one
  return 1;
}

}  // namespace tidepool::app
