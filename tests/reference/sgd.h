// Reference SGD step in double, PyTorch's form (no dampening, no Nesterov):
//   g = dw + weight_decay * w;  v = momentum * v + g;  w -= lr * v
#pragma once

#include <cstdint>

namespace tidepool::reference {

void sgd_update(std::int64_t count, double lr, double momentum, double weight_decay, double* w,
                const double* dw, double* velocity);

}  // namespace tidepool::reference
