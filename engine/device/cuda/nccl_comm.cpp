#include "engine/device/cuda/nccl_comm.h"

#include <exception>
#include <string>

#include "engine/comm/communicator.h"
#include "engine/device/cuda/cuda_util.h"

namespace tidepool::cuda {

namespace {

const char* status_name(ncclResult_t status) {
  switch (status) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult_t";
  }
}

// What a user can do about it, by kind of failure ("" where nothing
// helps but NCCL's own account).
const char* advice(ncclResult_t status) {
  switch (status) {
    case ncclSystemError:
    case ncclRemoteError:
      return "a rank or the network between the machines failed: check that every machine reaches the others "
             "(NCCL_SOCKET_IFNAME picks the interface)";
    case ncclUnhandledCudaError:
      return "a CUDA call inside NCCL failed; NCCL's buffers live outside the arena, so a budget that leaves the "
             "GPU almost no free memory starves them (give a smaller --budget)";
    default:
      return "";
  }
}

}  // namespace

void check(ncclResult_t status, const char* call) {
  if (status == ncclSuccess) return;
  std::string description = ncclGetErrorString(status);
  // NCCL's own sentence about its last failure ("Duplicate GPU detected:
  // rank 1 and rank 0 both on CUDA device ..."), which the status lacks.
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') description += std::string(" (") + last + ")";
  if (*advice(status) != '\0') description += std::string("; ") + advice(status);
  // Most of NCCL's descriptions already say to set NCCL_DEBUG; the others
  // get it here.
  if (description.find("NCCL_DEBUG") == std::string::npos)
    description += "; run with NCCL_DEBUG=WARN for NCCL's own account";
  throw CudaError(CudaError::Library::nccl, call, static_cast<int>(status), status_name(status), description);
}

NcclComm::NcclComm(Communicator& ranks) {
  // Rank 0 always sends something, also when it could not make an id:
  // the others would otherwise wait in the broadcast for good.
  struct Invitation {
    int ok = 0;
    ncclUniqueId id{};
  } invitation;
  std::exception_ptr failed;
  if (ranks.rank() == 0) {
    try {
      TP_CALL(ncclGetUniqueId, &invitation.id);
      invitation.ok = 1;
    } catch (...) {
      failed = std::current_exception();
    }
  }
  ranks.broadcast(&invitation, sizeof invitation, 0);
  if (failed) std::rethrow_exception(failed);
  if (!invitation.ok) {
    throw DeviceError("rank 0 could not start NCCL for the gradient all-reduce (its error says why); this rank "
                      "stops too");
  }
  TP_CALL(ncclCommInitRank, &comm_, ranks.size(), invitation.id, ranks.rank());
}

NcclComm::~NcclComm() {
  if (comm_) (void)ncclCommAbort(comm_);
}

void NcclComm::all_reduce_sum(float* data, std::size_t count, cudaStream_t stream) {
  sum(data, count, ncclFloat, stream);
}

void NcclComm::all_reduce_sum(double* data, std::size_t count, cudaStream_t stream) {
  sum(data, count, ncclDouble, stream);
}

void NcclComm::sum(void* data, std::size_t count, int type, cudaStream_t stream) {
  ncclResult_t earlier = ncclSuccess;
  TP_CALL(ncclCommGetAsyncError, comm_, &earlier);
  check(earlier, "ncclAllReduce (an earlier one, reported by ncclCommGetAsyncError)");
  TP_CALL(ncclAllReduce, data, data, count, static_cast<ncclDataType_t>(type), ncclSum, comm_, stream);
}

}  // namespace tidepool::cuda
