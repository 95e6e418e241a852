// Errors of the cuda device, as typed exceptions that name the failing call.
//
// Every CUDA runtime, cuDNN, cuBLAS and NCCL status that is not success
// becomes a CudaError whose message reads "<call>: <status name>: <description>",
// e.g. "cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM: ...". It derives
// from DeviceError, so the command line reports it like any other device
// failure ("tidepool: error: ...") instead of aborting.
//
// This header is CUDA-free on purpose: code above the backend (the app, the
// tests) may catch CudaError without seeing cuda_runtime.h. The checking
// helpers that do need the CUDA types live in cuda_util.h.
#pragma once

#include <string>

#include "engine/device/device.h"

namespace tidepool {

class CudaError : public DeviceError {
 public:
  enum class Library { cuda, cudnn, cublas, nccl };

  CudaError(Library library, std::string call, int status, const std::string& status_name,
            const std::string& description);

  Library library() const { return library_; }
  // The API function that failed, e.g. "cudaMalloc".
  const std::string& call() const { return call_; }
  // The library's numeric status (cudaError_t, cudnnStatus_t, cublasStatus_t or
  // ncclResult_t).
  int status() const { return status_; }

 private:
  Library library_;
  std::string call_;
  int status_;
};

}  // namespace tidepool
