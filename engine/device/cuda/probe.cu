// An empty kernel, launched once when a cuda device starts: a build without
// code for this GPU's architecture fails here, with a message that says so,
// rather than in the middle of the first iteration (cuda_device.cpp).
#include "engine/device/cuda/cuda_util.h"

namespace tidepool::cuda {
namespace {

__global__ void probe_kernel() {}

}  // namespace

cudaError_t probe_kernel_image() {
  probe_kernel<<<1, 1>>>();
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  const cudaError_t ran = cudaDeviceSynchronize();
  (void)cudaGetLastError();
  return ran;
}

}  // namespace tidepool::cuda
