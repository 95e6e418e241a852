#include "app/device_factory.h"

#include <stdexcept>

#include "engine/cpu/cpu_device.h"

namespace tidepool::app {

std::unique_ptr<Device> make_device(const std::string& name, double link_gbps) {
  if (name == "cpu") return std::make_unique<CpuDevice>(CpuDeviceOptions{link_gbps});
  if (name == "cuda")
    throw std::invalid_argument(
        "the cuda device is not part of this build yet: the engine has the cpu device only (use --device cpu)");
  throw std::invalid_argument("unknown device '" + name + "' (valid: cpu, cuda)");
}

}  // namespace tidepool::app
