#include "engine/device/cpu/cpu_queries.h"

#include "engine/device/cpu/cpu_kernels.h"

namespace tidepool {

// The kernel table answers for itself; nothing runs until a kernel is called.
std::unique_ptr<KernelQueries> make_cpu_queries() { return std::make_unique<CpuKernels>(); }

}  // namespace tidepool
