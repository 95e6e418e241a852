#include "reference/conv2d.h"

#include <algorithm>
#include <cstdint>

namespace tidepool::reference {
namespace {

// Walks every (output element, tap) pair that reads a real input element
// (taps on padding contribute nothing) and hands the flat indices of the
// input, weight and output elements to `visit`. All three passes are the
// same sum read in different directions, so they share the walk and cannot
// disagree on indexing.
template <class Visit>
void for_each_tap(const ConvShape& s, Visit&& visit) {
  const std::int64_t cg = s.c / s.groups;  // input channels per group
  const std::int64_t kg = s.k / s.groups;  // output channels per group
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  for (std::int64_t n = 0; n < s.n; ++n) {
    for (std::int64_t k = 0; k < s.k; ++k) {
      const std::int64_t g = k / kg;
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const std::int64_t yi = ((n * s.k + k) * oh + oy) * ow + ox;
          for (std::int64_t ci = 0; ci < cg; ++ci) {
            const std::int64_t c = g * cg + ci;
            for (std::int64_t ky = 0; ky < s.r; ++ky) {
              const std::int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dil_h;
              if (iy < 0 || iy >= s.h) continue;
              for (std::int64_t kx = 0; kx < s.s; ++kx) {
                const std::int64_t ix = ox * s.stride_w - s.pad_w + kx * s.dil_w;
                if (ix < 0 || ix >= s.w) continue;
                const std::int64_t xi = ((n * s.c + c) * s.h + iy) * s.w + ix;
                const std::int64_t wi = ((k * cg + ci) * s.r + ky) * s.s + kx;
                visit(xi, wi, yi);
              }
            }
          }
        }
      }
    }
  }
}

std::int64_t out_count(const ConvShape& s) { return s.n * s.k * s.out_h() * s.out_w(); }
std::int64_t in_count(const ConvShape& s) { return s.n * s.c * s.h * s.w; }

}  // namespace

void conv2d_forward(const ConvShape& s, const double* x, const double* w, const double* b,
                    double* y) {
  const std::int64_t plane = s.out_h() * s.out_w();
  for (std::int64_t i = 0; i < out_count(s); ++i) {
    const std::int64_t k = (i / plane) % s.k;
    y[i] = (s.bias && b != nullptr) ? b[k] : 0.0;
  }
  for_each_tap(s,
               [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { y[yi] += x[xi] * w[wi]; });
}

void conv2d_backward_data(const ConvShape& s, const double* dy, const double* w, double* dx) {
  std::fill(dx, dx + in_count(s), 0.0);
  for_each_tap(
      s, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dx[xi] += dy[yi] * w[wi]; });
}

void conv2d_backward_weights(const ConvShape& s, const double* x, const double* dy, double* dw,
                             double* db) {
  std::fill(dw, dw + s.weight_numel(), 0.0);
  for_each_tap(
      s, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dw[wi] += x[xi] * dy[yi]; });
  if (!s.bias || db == nullptr) return;
  const std::int64_t plane = s.out_h() * s.out_w();
  std::fill(db, db + s.k, 0.0);
  for (std::int64_t i = 0; i < out_count(s); ++i) db[(i / plane) % s.k] += dy[i];
}

}  // namespace tidepool::reference
