// Plain-loop ReLU in double. Backward reads the forward output y, as the
// kernel does: y > 0 exactly where x > 0.
#pragma once

#include <cstdint>

namespace tidepool::reference {

void relu_forward(std::int64_t count, const double* x, double* y);
void relu_backward(std::int64_t count, const double* y, const double* dy, double* dx);

}  // namespace tidepool::reference
