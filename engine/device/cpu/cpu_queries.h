// The cpu device's answers (KernelQueries) without a cpu device: what
// `plan` and `tune` ask when they plan for this machine's cpu device, and
// the sim device when its profile was measured on the cpu device. They
// come from oneDNN on this processor, as the cpu device's kernels do.
#pragma once

#include <memory>

#include "engine/device/kernel_queries.h"

namespace tidepool {

std::unique_ptr<KernelQueries> make_cpu_queries();

}  // namespace tidepool
