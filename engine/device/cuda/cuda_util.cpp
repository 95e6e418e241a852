// The helpers of cuda_util.h that are more than one line: binding the
// current device, device buffers with an out-of-memory message a user can
// act on, and cuDNN descriptors.
#include "engine/device/cuda/cuda_util.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace tidepool::cuda {

void bind_device(int ordinal) {
  // cudaGetDevice is a thread-local read; cudaSetDevice only when needed.
  int current = -1;
  TP_CALL(cudaGetDevice, &current);
  if (current != ordinal) TP_CALL(cudaSetDevice, ordinal);
}

namespace {

// The failed allocation left a (non-sticky) error behind; take it now so
// that the next unrelated launch check does not report it again. Then the
// GPU's figures and what the user can do about it.
[[noreturn]] void throw_out_of_memory_doing(const std::string& doing) {
  (void)cudaGetLastError();
  std::size_t free_bytes = 0, total_bytes = 0;
  std::string figures;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    figures = ": " + format_bytes(free_bytes) + " free of " + format_bytes(total_bytes) + " on this GPU";
  } else {
    (void)cudaGetLastError();
  }
  throw DeviceError("cuda device: out of device memory " + doing + figures +
                    "; try a smaller --batch-size or --budget, or an offload --mode");
}

}  // namespace

void throw_out_of_memory(std::size_t requested, const char* what) {
  throw_out_of_memory_doing("reserving " + format_bytes(requested) + " (" +
                            std::to_string(requested) + " bytes) for " + what);
}

void throw_out_of_memory(const char* what, const char* call, const char* status) {
  throw_out_of_memory_doing(std::string("creating ") + what + " (" + call + ": " + status + ")");
}

void throw_library_start_failure(const char* what, const char* call, const char* status) {
  std::size_t free_bytes = 0, total_bytes = 0;
  const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  (void)cudaGetLastError();
  // A handle needs streams and a few MiB of its own: on a GPU that has
  // less than kLibraryStartBytes free the libraries fail with whatever
  // status their first failed allocation gave (an H100 filled by an arena
  // answered CUDNN_STATUS_INTERNAL_ERROR from cudaStreamCreateWithFlags).
  if (!known || free_bytes < kLibraryStartBytes) throw_out_of_memory(what, call, status);
  // With room to spare, a library that cannot start is one that does not
  // fit the runtime or the driver it found.
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  int cublas_major = 0, cublas_minor = 0;
  (void)cublasGetProperty(MAJOR_VERSION, &cublas_major);
  (void)cublasGetProperty(MINOR_VERSION, &cublas_minor);
  auto cuda_version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  const std::size_t cudnn = cudnnGetVersion();
  throw DeviceError(std::string("cuda device: ") + call + " failed creating " + what + " (" + status + ") with " +
                    format_bytes(free_bytes) + " free of " + format_bytes(total_bytes) +
                    ": the libraries do not fit together. Loaded: cuDNN " + std::to_string(cudnn / 10000) + "." +
                    std::to_string(cudnn % 10000 / 100) + "." + std::to_string(cudnn % 100) +
                    " (built for CUDA runtime " + cuda_version(static_cast<int>(cudnnGetCudartVersion())) +
                    "), cuBLAS " + std::to_string(cublas_major) + "." + std::to_string(cublas_minor) +
                    ", CUDA runtime " + cuda_version(runtime) + ", a driver for CUDA up to " +
                    cuda_version(driver) + " (this build was compiled against cuDNN " +
                    std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + " and CUDA " +
                    cuda_version(CUDART_VERSION) + "); `ldd $(command -v tidepool)` shows which files load");
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, const char* what) : size_(bytes) {
  if (bytes == 0) return;
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) throw_out_of_memory(bytes, what);
  check(status, "cudaMalloc");
  ptr_.reset(p);
}

namespace {

cudnnDataType_t cudnn_type(DType type) {
  switch (type) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::i32: break;
  }
  throw std::invalid_argument("cuDNN descriptor: " + std::string(to_string(type)) + " is not a float type");
}

}  // namespace

TensorDesc tensor_desc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, DType type) {
  cudnnTensorDescriptor_t raw = nullptr;
  TP_CALL(cudnnCreateTensorDescriptor, &raw);
  TensorDesc desc(raw);
  // cuDNN's 4-d descriptors take int dimensions and also index the whole
  // tensor with 32-bit strides, so the element count must fit too.
  to_int(n * c * h * w, "tensor elements");
  TP_CALL(cudnnSetTensor4dDescriptor, desc.get(), CUDNN_TENSOR_NCHW, cudnn_type(type),
          to_int(n, "n"), to_int(c, "c"), to_int(h, "h"), to_int(w, "w"));
  return desc;
}

FilterDesc filter_desc(std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s, DType type) {
  cudnnFilterDescriptor_t raw = nullptr;
  TP_CALL(cudnnCreateFilterDescriptor, &raw);
  FilterDesc desc(raw);
  TP_CALL(cudnnSetFilter4dDescriptor, desc.get(), cudnn_type(type), CUDNN_TENSOR_NCHW,
          to_int(k, "k"), to_int(c, "c / groups"), to_int(r, "r"), to_int(s, "s"));
  return desc;
}

}  // namespace tidepool::cuda
