#include "reference/dropout.h"

namespace tidepool::reference {

std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool dropout_keeps(std::uint64_t seed, std::uint64_t index, double p) {
  const double u = static_cast<double>(splitmix64(seed ^ index) >> 40) / 16777216.0;
  return u >= p;
}

void dropout_forward(std::int64_t count, double p, std::uint64_t seed, const double* x, double* y,
                     double* mask) {
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  for (std::int64_t i = 0; i < count; ++i) {
    mask[i] = dropout_keeps(seed, static_cast<std::uint64_t>(i), p) ? scale : 0.0;
    y[i] = x[i] * mask[i];
  }
}

void dropout_backward(std::int64_t count, const double* mask, const double* dy, double* dx) {
  for (std::int64_t i = 0; i < count; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace tidepool::reference
