#include "engine/device/cuda/all_reduce.h"

#include <set>

#include "engine/comm/communicator.h"
#include "engine/device/cuda/cuda_util.h"
#ifdef TIDEPOOL_HAVE_NCCL
#include "engine/device/cuda/nccl_comm.h"
#endif

namespace tidepool::cuda {

std::uint64_t gpu_identity(const cudaUUID_t& uuid) {
  // FNV-1a over the 16 bytes: 64 bits keep two GPUs apart for any number
  // of ranks a run could have.
  std::uint64_t h = 14695981039346656037ull;
  for (char c : uuid.bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

bool nccl_built() {
#ifdef TIDEPOOL_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

// What this device knows of one Communicator: the way its ranks chose and,
// for nccl, the communicator NCCL made for them.
struct CudaAllReduce::Group {
  const Communicator* ranks = nullptr;
  int rank = 0, size = 0;
  bool nccl = false;
#ifdef TIDEPOOL_HAVE_NCCL
  std::unique_ptr<NcclComm> comm;
#endif
};

CudaAllReduce::CudaAllReduce(std::uint64_t gpu) : gpu_(gpu) {}

CudaAllReduce::~CudaAllReduce() = default;

CudaAllReduce::Group& CudaAllReduce::group_for(Communicator& ranks) {
  for (const auto& g : groups_)
    if (g->ranks == &ranks && g->rank == ranks.rank() && g->size == ranks.size()) return *g;

  // The vote (see the header): this GPU's identity where this rank could
  // take part in NCCL, 0 where it cannot (no NCCL in this build, or
  // simulated ranks, which have no peers to meet). Every rank gathers
  // every vote, so every rank reaches the same answer.
  const bool could = nccl_built() && ranks.transport() != "simulated";
  const std::vector<std::uint64_t> votes = ranks.all_gather(could ? gpu_ : 0);
  const std::set<std::uint64_t> distinct(votes.begin(), votes.end());
  auto g = std::make_unique<Group>();
  g->ranks = &ranks;
  g->rank = ranks.rank();
  g->size = ranks.size();
  g->nccl = distinct.size() == votes.size() && !distinct.contains(0);
#ifdef TIDEPOOL_HAVE_NCCL
  if (g->nccl) g->comm = std::make_unique<NcclComm>(ranks);
#endif
  groups_.push_back(std::move(g));
  return *groups_.back();
}

void CudaAllReduce::run(cudaStream_t stream, float* data, std::size_t count, Communicator& ranks) {
  sum(stream, data, count, ranks);
}

void CudaAllReduce::run(cudaStream_t stream, double* data, std::size_t count, Communicator& ranks) {
  sum(stream, data, count, ranks);
}

template <typename T>
void CudaAllReduce::sum(cudaStream_t stream, T* data, std::size_t count, Communicator& ranks) {
  // The first call with `ranks` votes, an empty bucket's too: the other
  // ranks vote at the same point.
  Group& g = group_for(ranks);
  if (count == 0) return;
  if (g.nccl) {  // never without NCCL: this rank voted against it
#ifdef TIDEPOOL_HAVE_NCCL
    g.comm->all_reduce_sum(data, count, stream);
    return;
#endif
  }
  sum_on_host(stream, data, count, ranks);
}

template <typename T>
void CudaAllReduce::sum_on_host(cudaStream_t stream, T* data, std::size_t count, Communicator& ranks) {
  const std::size_t bytes = count * sizeof(T);
  if (bytes > staging_bytes_) {
    // The previous bucket's copy back may still read the old buffer.
    TP_CALL(cudaStreamSynchronize, stream);
    staging_.reset();
    staging_bytes_ = 0;
    void* p = nullptr;
    const cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw DeviceError("cuda device: cannot pin " + format_bytes(bytes) +
                        " of host memory to sum a gradient bucket over the ranks; give a smaller --bucket-size "
                        "or free host memory");
    }
    check(status, "cudaHostAlloc");
    staging_.reset(static_cast<std::byte*>(p));
    staging_bytes_ = bytes;
  }
  T* host = reinterpret_cast<T*>(staging_.get());
  TP_CALL(cudaMemcpyAsync, host, data, bytes, cudaMemcpyDeviceToHost, stream);
  // The stream's order ends here for the host: the copy waits behind the
  // bucket's pack (the executor made the stream wait for it), and the sum
  // needs the bytes.
  TP_CALL(cudaStreamSynchronize, stream);
  ranks.all_reduce_sum(host, count);
  // Ordered before the next bucket's copy into the same buffer: one stream.
  TP_CALL(cudaMemcpyAsync, data, host, bytes, cudaMemcpyHostToDevice, stream);
}

std::string CudaAllReduce::way(const Communicator& ranks) const {
  for (const auto& g : groups_)
    if (g->ranks == &ranks && g->rank == ranks.rank() && g->size == ranks.size()) return g->nccl ? "nccl" : "host";
  return "";
}

}  // namespace tidepool::cuda
