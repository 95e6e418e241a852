#include "engine/device/cpu/denormals.h"

#include <pmmintrin.h>
#include <xmmintrin.h>

namespace tidepool {

void flush_denormals_on_this_thread() {
  // MXCSR is per thread: set it here and on every thread of this thread's
  // OpenMP pool, which libgomp keeps alive for later parallel regions.
#pragma omp parallel
  {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}

}  // namespace tidepool
