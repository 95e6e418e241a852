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

int MpiCommunicator::local_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* text = std::getenv(v);
    if (!text) continue;
    char* end = nullptr;
    const long rank = std::strtol(text, &end, 10);
    if (end != text && *end == '\0' && rank >= 0 && rank < INT_MAX) return static_cast<int>(rank);
  }
  return 0;
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

// Messages on their own communicator, so that a message can never match a
// collective's traffic whatever the threads interleave.
struct MpiCommunicator::Messages {
  MPI_Comm comm = MPI_COMM_NULL;
};

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
  messages_ = std::make_unique<Messages>();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &messages_->comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(messages_->comm, MPI_ERRORS_RETURN);
}

MpiCommunicator::~MpiCommunicator() {
  MPI_Comm_free(&messages_->comm);
  MPI_Finalize();
}

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

void MpiCommunicator::send(int to, int tag, const std::vector<unsigned char>& bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    throw CommError("a message of " + std::to_string(bytes.size()) + " bytes is more than MPI sends at once");
  check(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag, messages_->comm), "MPI_Send");
}

std::optional<Message> MpiCommunicator::try_receive(int tag) {
  // A matched probe takes the message it found off the queue, so two
  // threads receiving the same tag cannot both read it.
  int found = 0;
  MPI_Message handle;
  MPI_Status status;
  check(MPI_Improbe(MPI_ANY_SOURCE, tag, messages_->comm, &found, &handle, &status), "MPI_Improbe");
  if (!found) return std::nullopt;
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  Message m;
  m.from = status.MPI_SOURCE;
  m.bytes.resize(static_cast<std::size_t>(count));
  check(MPI_Mrecv(m.bytes.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE), "MPI_Mrecv");
  return m;
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
struct MpiCommunicator::Messages {};
MpiCommunicator::~MpiCommunicator() = default;
void MpiCommunicator::all_reduce_sum(float*, std::size_t) {}
void MpiCommunicator::all_reduce_sum(double*, std::size_t) {}
std::int64_t MpiCommunicator::all_reduce_max(std::int64_t value) { return value; }
void MpiCommunicator::broadcast(void*, std::size_t, int) {}
std::vector<std::uint64_t> MpiCommunicator::all_gather(std::uint64_t value) { return {value}; }
void MpiCommunicator::send(int, int, const std::vector<unsigned char>&) {}
std::optional<Message> MpiCommunicator::try_receive(int) { return std::nullopt; }
void MpiCommunicator::abort(int status) { std::_Exit(status); }

#endif

}  // namespace tidepool
