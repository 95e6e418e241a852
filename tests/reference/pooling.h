// Plain-loop max and average pooling in double, NCHW. Max pooling ignores
// padded taps and sends each window's gradient to its (first) maximum;
// average pooling divides by the full window, padding included (PyTorch's
// count_include_pad=True). Backward overwrites dx.
#pragma once

#include "engine/device/kernels.h"

namespace tidepool::reference {

void pool_forward(const PoolShape& s, const double* x, double* y);
// Max pooling recomputes each window's arg-max from x, so unlike the kernel
// it needs no saved state.
void pool_backward(const PoolShape& s, const double* x, const double* dy, double* dx);

}  // namespace tidepool::reference
