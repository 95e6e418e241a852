// The cuda device's all-reduce (Device::all_reduce): a bucket of f32 (or
// --sync-bn's f64 sums) in device memory summed over a Communicator's
// ranks, in a stream's order.
//
//   CudaAllReduce sums(gpu_identity(props.uuid));
//   sums.run(comm_stream, bucket, count, ranks);   // on the thread that issues the stream's work
//
// Two ways, chosen once per Communicator at its first all-reduce, by all
// its ranks together (each sends a vote with Communicator::all_gather, so
// they cannot choose differently, even when their builds differ):
//
//  - nccl: ncclAllReduce enqueued on the stream (engine/device/cuda/
//    nccl_comm.h), which returns at once; the executor's events order it
//    after the bucket's pack and before its unpack. Taken when every
//    rank's build has NCCL and every rank has a GPU of its own (their
//    GPUs' UUIDs all differ), whatever carries the Communicator's own
//    bytes: mpirun's processes, or threads of one process (LocalGroup) on
//    distinct GPUs, which NCCL supports with one thread per GPU.
//  - host: the bucket copied into a pinned staging buffer on the stream,
//    the stream waited for, Communicator::all_reduce_sum on the host, and
//    the sum copied back on the stream (asynchronously). Taken otherwise:
//    a build without NCCL, ranks that share a GPU (threads of one process
//    on one GPU, as the tests run them, or more of mpirun's ranks on a
//    machine than it has GPUs: NCCL refuses two ranks on one GPU), or
//    simulated ranks (no peers to meet). The wait blocks the issuing thread until the bucket
//    is packed, so backward issued behind it waits too: correct, not
//    fast. The staging buffer is as large as the largest bucket so far,
//    grown when a larger one comes, and freed with this object.
//
// Every rank makes its all-reduces, and so the first one's vote and
// NCCL's start-up (a broadcast of NCCL's id), at the same point of its
// sequence of collectives: the cuda device issues them on the executor's
// own thread, between the collectives the run makes there.
//
// A Communicator is known by its address, rank and size; one destroyed
// and another made at the same address with the same rank and size would
// be taken for it (the device outlives neither in a run).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tidepool {

class Communicator;

namespace cuda {

// A GPU's UUID folded into 64 bits (never 0, which votes against NCCL):
// ranks on one GPU give the same value, ranks on distinct GPUs, on one
// machine or several, distinct values.
std::uint64_t gpu_identity(const cudaUUID_t& uuid);

// Whether this build has NCCL.
bool nccl_built();

class CudaAllReduce {
 public:
  // `gpu`: gpu_identity of the device's GPU, which is current whenever
  // run() is called.
  explicit CudaAllReduce(std::uint64_t gpu);
  // Frees the NCCL communicators and the staging buffer; the caller has
  // drained the streams they were used on.
  ~CudaAllReduce();
  CudaAllReduce(const CudaAllReduce&) = delete;
  CudaAllReduce& operator=(const CudaAllReduce&) = delete;

  // `data` (count f32 in device memory) summed over `ranks` in place, in
  // `stream`'s order. Throws CudaError for a failed CUDA or NCCL call,
  // DeviceError when the staging buffer cannot be pinned, and what the
  // Communicator throws (CommError).
  void run(cudaStream_t stream, float* data, std::size_t count, Communicator& ranks);
  void run(cudaStream_t stream, double* data, std::size_t count, Communicator& ranks);

  // "nccl" or "host" for a Communicator this has summed over, "" for one
  // it has not met yet.
  std::string way(const Communicator& ranks) const;

 private:
  struct Group;
  Group& group_for(Communicator& ranks);
  template <typename T>
  void sum(cudaStream_t stream, T* data, std::size_t count, Communicator& ranks);
  template <typename T>
  void sum_on_host(cudaStream_t stream, T* data, std::size_t count, Communicator& ranks);

  std::uint64_t gpu_;
  std::vector<std::unique_ptr<Group>> groups_;
  struct PinnedFree {
    void operator()(std::byte* p) const noexcept { (void)cudaFreeHost(p); }
  };
  std::unique_ptr<std::byte, PinnedFree> staging_;
  std::size_t staging_bytes_ = 0;
};

}  // namespace cuda
}  // namespace tidepool
