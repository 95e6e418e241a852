#include "engine/comm/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#ifdef TIDEPOOL_HAS_MPI
#include <mpi.h>
#endif

namespace tidepool {

bool MpiCommunicator::launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

#ifdef TIDEPOOL_HAS_MPI

namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommError(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)) +
                  " (a rank has died, or the network between them is down)");
}

// MPI counts are ints: larger buffers go in pieces.
constexpr std::size_t kMaxCount = INT_MAX / 2;

template <typename T>
void sum_in_pieces(T* data, std::size_t count, MPI_Datatype type) {
  for (std::size_t at = 0; at < count; at += kMaxCount) {
    const int n = static_cast<int>(std::min(kMaxCount, count - at));
    check(MPI_Allreduce(MPI_IN_PLACE, data + at, n, type, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
}

}  // namespace

bool MpiCommunicator::available() { return true; }

MpiCommunicator::MpiCommunicator() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw CommError("this MPI does not support MPI_THREAD_MULTIPLE, which the gradient all-reduces on the comm "
                    "stream need");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiCommunicator::~MpiCommunicator() { MPI_Finalize(); }

void MpiCommunicator::all_reduce_sum(float* data, std::size_t count) { sum_in_pieces(data, count, MPI_FLOAT); }
void MpiCommunicator::all_reduce_sum(double* data, std::size_t count) { sum_in_pieces(data, count, MPI_DOUBLE); }

std::int64_t MpiCommunicator::all_reduce_max(std::int64_t value) {
  check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return value;
}

void MpiCommunicator::broadcast(void* data, std::size_t bytes, int root) {
  auto* p = static_cast<char*>(data);
  for (std::size_t at = 0; at < bytes; at += kMaxCount) {
    const int n = static_cast<int>(std::min(kMaxCount, bytes - at));
    check(MPI_Bcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
}

std::vector<std::uint64_t> MpiCommunicator::all_gather(std::uint64_t value) {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD), "MPI_Allgather");
  return out;
}

void MpiCommunicator::abort(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return; should it, this process still ends
}

#else  // no MPI in this build

bool MpiCommunicator::available() { return false; }

MpiCommunicator::MpiCommunicator() {
  throw CommError("this tidepool was built without MPI, so it cannot train as one of mpirun's ranks: install Open "
                  "MPI (scripts/install-deps.sh does) and build again");
}
MpiCommunicator::~MpiCommunicator() = default;
void MpiCommunicator::all_reduce_sum(float*, std::size_t) {}
void MpiCommunicator::all_reduce_sum(double*, std::size_t) {}
std::int64_t MpiCommunicator::all_reduce_max(std::int64_t value) { return value; }
void MpiCommunicator::broadcast(void*, std::size_t, int) {}
std::vector<std::uint64_t> MpiCommunicator::all_gather(std::uint64_t value) { return {value}; }
void MpiCommunicator::abort(int status) { std::_Exit(status); }

#endif

}  // namespace tidepool
