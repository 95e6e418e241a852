// Status codes to CudaError: one check() per library, each naming the call.
#include "engine/device/cuda/cuda_error.h"

#include <array>
#include <climits>
#include <string>
#include <utility>

#include "engine/device/cuda/cuda_util.h"

namespace tidepool {

namespace {

std::string message(const std::string& call, const std::string& status_name,
                    const std::string& description) {
  std::string m = call + ": " + status_name;
  if (!description.empty() && description != status_name) m += ": " + description;
  return m;
}

}  // namespace

CudaError::CudaError(Library library, std::string call, int status, const std::string& status_name,
                     const std::string& description)
    : DeviceError(message(call, status_name, description)),
      library_(library),
      call_(std::move(call)),
      status_(status) {}

namespace cuda {

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw CudaError(CudaError::Library::cuda, call, static_cast<int>(status),
                  cudaGetErrorName(status), cudaGetErrorString(status));
}

void check(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  // cuDNN 9 keeps a per-thread explanation of its last failure ("the
  // filter's channel count does not match ..."), far more useful than the
  // status name alone.
  std::array<char, 1024> detail{};
  cudnnGetLastErrorString(detail.data(), detail.size());
  throw CudaError(CudaError::Library::cudnn, call, static_cast<int>(status),
                  cudnnGetErrorString(status), detail.data());
}

void check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(CudaError::Library::cublas, call, static_cast<int>(status),
                  cublasGetStatusName(status), cublasGetStatusString(status));
}

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  throw CudaError(CudaError::Library::cuda, std::string("launch of ") + kernel,
                  static_cast<int>(status), cudaGetErrorName(status), cudaGetErrorString(status));
}

int to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) {
    throw DeviceError(std::string("cuda device: ") + what + " = " + std::to_string(v) +
                      " does not fit cuDNN's 32-bit dimensions (at most " +
                      std::to_string(INT_MAX) + "); use a smaller batch");
  }
  return static_cast<int>(v);
}

}  // namespace cuda
}  // namespace tidepool
