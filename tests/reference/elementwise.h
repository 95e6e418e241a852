// Reference elementwise ops in double: residual add, copy (flatten's
// forward and backward) and gradient accumulation.
#pragma once

#include <cstdint>

namespace tidepool::reference {

void add_forward(std::int64_t count, const double* a, const double* b, double* y);
void copy(std::int64_t count, const double* x, double* y);
void accumulate(std::int64_t count, const double* x, double* acc);

}  // namespace tidepool::reference
