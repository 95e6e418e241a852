#include "reference/sgd.h"

namespace tidepool::reference {

void sgd_update(std::int64_t count, double lr, double momentum, double weight_decay, double* w,
                const double* dw, double* velocity) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double g = dw[i] + weight_decay * w[i];
    velocity[i] = momentum * velocity[i] + g;
    w[i] -= lr * velocity[i];
  }
}

}  // namespace tidepool::reference
