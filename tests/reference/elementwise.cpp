#include "reference/elementwise.h"

namespace tidepool::reference {

void add_forward(std::int64_t count, const double* a, const double* b, double* y) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = a[i] + b[i];
}

void copy(std::int64_t count, const double* x, double* y) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = x[i];
}

void accumulate(std::int64_t count, const double* x, double* acc) {
  for (std::int64_t i = 0; i < count; ++i) acc[i] += x[i];
}

}  // namespace tidepool::reference
