#include "app/device_factory.h"

#include <stdexcept>

#include "engine/comm/mpi_communicator.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/device/gpu_queries.h"
#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"
#ifdef TIDEPOOL_HAVE_CUDA
#include "engine/device/cuda/cuda_device.h"
#endif

namespace tidepool::app {

bool cuda_backend_built() {
#ifdef TIDEPOOL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void require_sim_profile(DeviceKind kind, const std::string& profile) {
  if (kind == DeviceKind::sim && profile.empty())
    throw std::invalid_argument("--device sim runs on a performance profile: give --profile FILE (one written by "
                                "`tidepool profile`) or a GPU specification (" + gpu_spec_names() + ")");
}

std::unique_ptr<Device> make_device(DeviceKind kind, double link_gbps, bool for_window, const std::string& profile) {
  constexpr int kWindowWorkerNice = 10;
  if (kind == DeviceKind::sim) {
    require_sim_profile(kind, profile);
    if (link_gbps != 0)
      throw std::invalid_argument("--link-gbps throttles the cpu device's link; the sim device's link is its "
                                  "profile's (leave --link-gbps at 0)");
    return make_sim_device(PerfModel(resolve_profile(profile)));
  }

  if (kind == DeviceKind::cpu)
    return std::make_unique<CpuDevice>(CpuDeviceOptions{link_gbps, for_window ? kWindowWorkerNice : 0});
  if (kind == DeviceKind::cuda) {
    if (!cuda_backend_built())
      throw std::invalid_argument(
          "this build has no CUDA backend: configure with -DTIDEPOOL_CUDA=ON on a machine with "
          "the CUDA toolkit and cuDNN, or use --device cpu");
    if (link_gbps != 0)
      throw std::invalid_argument(
          "--link-gbps throttles the cpu device's simulated link; the cuda device copies over the "
          "real one (leave --link-gbps at 0)");
#ifdef TIDEPOOL_HAVE_CUDA
    // Under mpirun each rank on a machine opens its own GPU (its rank on the
    // machine, round the GPUs there), so that ranks with a GPU each sum
    // with NCCL; ranks beyond the GPUs share them and sum on the host.
    const int gpus = cuda_device_count();
    return std::make_unique<CudaDevice>(CudaDeviceOptions{.ordinal = gpus > 0 ? MpiCommunicator::local_rank() % gpus : 0});
#endif
  }
  throw std::logic_error("make_device: a device kind without a factory");
}

std::unique_ptr<KernelQueries> queries_for(const Profile& profile) {
  if (profile.kernels == ProfiledKernels::cpu) return make_cpu_queries();
  return std::make_unique<GpuQueries>(profile.gpu);
}

std::unique_ptr<Device> make_sim_device(const PerfModel& model) {
  return std::make_unique<SimDevice>(model, SimNetwork{}, queries_for(model.profile()));
}

bool device_computes_values(DeviceKind kind) { return kind != DeviceKind::sim; }

}  // namespace tidepool::app
