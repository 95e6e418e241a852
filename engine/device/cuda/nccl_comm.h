// One NCCL communicator: the GPUs of a Communicator's ranks, one GPU per
// rank, summing f32 buffers in device memory on a CUDA stream.
//
//   NcclComm nccl(ranks);                          // every rank, together
//   nccl.all_reduce_sum(bucket, count, stream);    // enqueued; returns at once
//
// Compiled only where CMake found NCCL (TIDEPOOL_NCCL, which defines
// TIDEPOOL_HAVE_NCCL for the backend's own sources) and included only by
// engine/device/cuda/all_reduce.cpp: it pulls in nccl.h.
//
// defines:
//   check(ncclResult_t, call)   throw CudaError naming the call, with NCCL's explanation
//   NcclComm                    RAII ncclComm_t made over a Communicator
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

namespace tidepool {

class Communicator;

namespace cuda {

// Throws CudaError("<call>: <ncclResult name>: <NCCL's description and its
// last error>; <what to try>") unless the status is ncclSuccess. Works
// with TP_CALL.
void check(ncclResult_t status, const char* call);

class NcclComm {
 public:
  // A collective over `ranks`, on the calling thread's current GPU (the
  // device binds it first): rank 0 makes NCCL's unique id and sends it to
  // the others with ranks.broadcast, and every rank joins with
  // ncclCommInitRank, which returns once all of them have. Every rank must
  // call this at the same point of its sequence of collectives on `ranks`.
  // Each rank needs a GPU of its own: NCCL refuses two ranks on one
  // ("Duplicate GPU detected").
  explicit NcclComm(Communicator& ranks);
  // ncclCommAbort, not ncclCommDestroy: since NCCL 2.18 destroying is a
  // collective of the ranks on one machine, so a rank that leaves a run on
  // an error (its device destroyed while the others wait for it) would
  // hang there instead of reaching MPI_Abort. The device destroys this
  // only after its streams are drained, so there is nothing left to abort
  // and both free the same resources.
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // `data` (count f32, or f64: --sync-bn's sums, in device memory) summed over the ranks in place,
  // enqueued on `stream` (ncclAllReduce); returns without waiting. Every
  // rank gets the same bits. First throws an error an earlier all-reduce
  // met on the way (ncclCommGetAsyncError): NCCL reports network failures
  // that way, not through the stream.
  void all_reduce_sum(float* data, std::size_t count, cudaStream_t stream);
  void all_reduce_sum(double* data, std::size_t count, cudaStream_t stream);

 private:
  void sum(void* data, std::size_t count, int type, cudaStream_t stream);  // type: an ncclDataType_t
  ncclComm_t comm_ = nullptr;
};

}  // namespace cuda
}  // namespace tidepool
