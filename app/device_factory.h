// Devices by name, for the command line.
#pragma once

#include <memory>
#include <string>

#include "engine/device.h"

namespace tidepool::app {

// "cpu" (link_gbps throttles its host<->device copies; 0 = unthrottled) or
// "cuda". Throws std::invalid_argument for an unknown or unavailable device.
std::unique_ptr<Device> make_device(const std::string& name, double link_gbps);

}  // namespace tidepool::app
