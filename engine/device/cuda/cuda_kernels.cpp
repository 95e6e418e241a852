// CudaKernels' lifetime: the handles of one table, and the plan cache all
// tables on one GPU share.
//
// Why a cache: choosing a convolution algorithm asks cuDNN's heuristics (and
// for `p`, times every candidate), which costs milliseconds, while a
// training step runs the same few dozen shapes thousands of times. Each
// (shape, scheme, pass) is decided once per process and GPU and kept, so
// the workspace size the planner was told and the algorithm that later runs
// are the same — and so one process never switches algorithms for a shape,
// which would change the numbers.
#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/gpu_queries.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/device/cuda/cuda_util.h"

namespace tidepool {

namespace cuda {

CacheEntry& PlanCache::find_or_build(const CacheKey& key,
                                     const std::function<std::unique_ptr<CacheEntry>()>& make) {
  // Building under the lock is deliberate: two threads asking for the same
  // new shape would otherwise both time its algorithms, and the answers
  // could differ. Builds only happen while a model is being planned.
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return *it->second;
  std::unique_ptr<CacheEntry> built = make();
  if (!built) throw std::logic_error("cuda cache: builder returned no entry");
  return *cache_.emplace(key, std::move(built)).first->second;
}

std::vector<std::string> PlanCache::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> lines;
  for (const auto& [key, entry] : cache_)
    if (std::string line = entry->recorded(); !line.empty()) lines.push_back(std::move(line));
  std::sort(lines.begin(), lines.end());
  return lines;
}

void PlanCache::adopt(const std::vector<std::string>& lines) {
  std::lock_guard<std::mutex> lock(mutex_);
  adopted_.adopt(lines);
}

// Called while an entry is built, under mutex_ (find_or_build).
std::string PlanCache::adopted_choice(const std::string& shape) const { return adopted_.adopted(shape); }

PlanCache& plan_cache(int ordinal) {
  static std::mutex mutex;
  // Leaked on purpose (see PlanCache); a map of pointers so that a cache
  // never moves once handed out.
  static auto* caches = new std::unordered_map<int, PlanCache*>();
  std::lock_guard<std::mutex> lock(mutex);
  PlanCache*& cache = (*caches)[ordinal];
  if (!cache) cache = new PlanCache();
  return *cache;
}

// Creating a handle allocates device memory, and on a full GPU the
// libraries report that as a status of their own rather than as
// cudaErrorMemoryAllocation (cuDNN 9 on an H100: INTERNAL_ERROR, from a
// stream it could not create). throw_library_start_failure tells that
// apart from libraries that do not fit the runtime by the memory free.
CudnnHandle make_cudnn_handle(cudaStream_t stream) {
  cudnnHandle_t raw = nullptr;
  const cudnnStatus_t st = cudnnCreate(&raw);
  if (st != CUDNN_STATUS_SUCCESS) throw_library_start_failure("a cuDNN handle", "cudnnCreate", cudnnGetErrorString(st));
  CudnnHandle handle(raw);
  TP_CALL(cudnnSetStream, handle.get(), stream);
  return handle;
}

namespace {

CublasHandle make_cublas_handle() {
  cublasHandle_t raw = nullptr;
  const cublasStatus_t st = cublasCreate(&raw);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw_library_start_failure("a kernel table's cuBLAS handle", "cublasCreate", cublasGetStatusName(st));
  return CublasHandle(raw);
}

}  // namespace

Shared::Shared(int gpu, cudaStream_t compute)
    : ordinal(gpu), plans(plan_cache(gpu)), planning(make_cudnn_handle(compute)) {}

Context::Context(std::shared_ptr<Shared> shared_state, cudaStream_t bound)
    : shared(std::move(shared_state)), stream(bound) {
  cudnn = make_cudnn_handle(stream);
  cublas = make_cublas_handle();
  // cublasSetStream resets the workspace to the library's pool, so the
  // stream is set first and the fixed workspace after it.
  TP_CALL(cublasSetStream, cublas.get(), stream);
  TP_CALL(cudaDeviceGetAttribute, &compute_major, cudaDevAttrComputeCapabilityMajor, shared->ordinal);
  cublas_workspace_bytes = cublas_workspace_for(compute_major);
  scratch = DeviceBuffer(cublas_workspace_bytes + kChannelScratchFloats * sizeof(float),
                         "a kernel table's scratch (cuBLAS workspace and per-channel values)");
  TP_CALL(cublasSetWorkspace, cublas.get(), scratch.get(), cublas_workspace_bytes);
  channel_scratch = reinterpret_cast<float*>(scratch.bytes() + cublas_workspace_bytes);
  // Plain f32 GEMMs: no TF32 tensor cores, like the convolutions.
  TP_CALL(cublasSetMathMode, cublas.get(), CUBLAS_DEFAULT_MATH);
  TP_CALL(cublasSetPointerMode, cublas.get(), CUBLAS_POINTER_MODE_HOST);
}

}  // namespace cuda

CudaKernels::CudaKernels(std::unique_ptr<cuda::Context> context) : ctx_(std::move(context)) {
  if (!ctx_) throw std::invalid_argument("cuda kernels: no context");
}

// Out of line so that the header never needs cuda::Context's definition.
CudaKernels::~CudaKernels() = default;

bool CudaKernels::takes_16bit(DType type) const {
  return type == DType::f16 || (type == DType::bf16 && ctx_->compute_major >= 8);
}

std::string CudaKernels::refuses_16bit(DType type) const {
  return type == DType::bf16 && !takes_16bit(type) ? gpu_refuses_bf16("GPU (compute capability " + std::to_string(ctx_->compute_major) + ".x)") : "";
}

}  // namespace tidepool
