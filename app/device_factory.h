// Devices by name, for the command line.
#pragma once

#include <memory>
#include <string>

#include "engine/device/device.h"
#include "engine/device/kernel_queries.h"
#include "engine/perf/perf_model.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

// cpu (link_gbps throttles its simulated host<->device link; 0 =
// unthrottled) or cuda (GPU 0, or under mpirun the rank's on its machine
// round the GPUs there: MpiCommunicator::local_rank; copies go over the real link, so a
// non-zero link_gbps is refused rather than silently ignored).
// Throws std::invalid_argument for a link bandwidth for cuda, or cuda in a
// build without the CUDA backend, and DeviceError when
// the build has it but the machine has no usable GPU ("no CUDA device is
// available: <reason>").
// `for_window`: the cpu device's workers run at a lower priority so the
// window on the same cores stays responsive (no effect on the numbers, nor
// on the cuda device, whose work runs on the GPU).
// sim runs on `profile` (a profile file, or a GPU specification's name:
// engine/perf/spec_profiles.h), which it requires; the other devices run
// at their own speed and leave a profile to the planner (app/session.cpp).
std::unique_ptr<Device> make_device(DeviceKind kind, double link_gbps, bool for_window = false,
                                    const std::string& profile = "");

// The sim device without a profile: refused, as every command that runs or
// plans it says (std::invalid_argument naming --profile and the GPU
// specifications).
void require_sim_profile(DeviceKind kind, const std::string& profile);

// The answers a plan for `profile`'s device asks (engine/device/
// kernel_queries.h): a GPU profile's own (GpuQueries, whatever the host),
// or, for a profile measured on the cpu device, this machine's cpu
// device's. Without a profile, plans ask make_cpu_queries() (this
// machine's cpu device).
std::unique_ptr<KernelQueries> queries_for(const Profile& profile);

// A sim device on `model`, answering as queries_for(model.profile()).
std::unique_ptr<Device> make_sim_device(const PerfModel& model);

// What a device of `kind` will say in DeviceCaps::computes_values, before
// there is one (a window starting a run, a recorded run): sim computes none.
bool device_computes_values(DeviceKind kind);

// Whether this build has the cuda device (configured with TIDEPOOL_CUDA).
bool cuda_backend_built();

}  // namespace tidepool::app
