#include "reference/linear.h"

#include <cstdint>

namespace tidepool::reference {

void linear_forward(const LinearShape& s, const double* x, const double* w, const double* b,
                    double* y) {
  for (std::int64_t n = 0; n < s.n; ++n) {
    for (std::int64_t o = 0; o < s.out; ++o) {
      double acc = b != nullptr ? b[o] : 0.0;
      for (std::int64_t i = 0; i < s.in; ++i) acc += x[n * s.in + i] * w[o * s.in + i];
      y[n * s.out + o] = acc;
    }
  }
}

void linear_backward_data(const LinearShape& s, const double* dy, const double* w, double* dx) {
  for (std::int64_t n = 0; n < s.n; ++n) {
    for (std::int64_t i = 0; i < s.in; ++i) {
      double acc = 0.0;
      for (std::int64_t o = 0; o < s.out; ++o) acc += dy[n * s.out + o] * w[o * s.in + i];
      dx[n * s.in + i] = acc;
    }
  }
}

void linear_backward_weights(const LinearShape& s, const double* x, const double* dy, double* dw,
                             double* db) {
  for (std::int64_t o = 0; o < s.out; ++o) {
    for (std::int64_t i = 0; i < s.in; ++i) {
      double acc = 0.0;
      for (std::int64_t n = 0; n < s.n; ++n) acc += dy[n * s.out + o] * x[n * s.in + i];
      dw[o * s.in + i] = acc;
    }
    if (db != nullptr) {
      double acc = 0.0;
      for (std::int64_t n = 0; n < s.n; ++n) acc += dy[n * s.out + o];
      db[o] = acc;
    }
  }
}

}  // namespace tidepool::reference
