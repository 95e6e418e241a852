#include "reference/relu.h"

namespace tidepool::reference {

void relu_forward(std::int64_t count, const double* x, double* y) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] > 0.0 ? x[i] : 0.0;
}

void relu_backward(std::int64_t count, const double* y, const double* dy, double* dx) {
  for (std::int64_t i = 0; i < count; ++i) dx[i] = y[i] > 0.0 ? dy[i] : 0.0;
}

}  // namespace tidepool::reference
