#include "reference/pooling.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace tidepool::reference {
namespace {

// Calls visit(y index, x index of each real tap in the window, window
// size including padding) for every output element; max pooling reduces
// over the taps, average pooling sums them.
template <class Visit>
void for_each_window(const PoolShape& s, Visit&& visit) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  std::vector<std::int64_t> taps;
  taps.reserve(static_cast<std::size_t>(s.kh * s.kw));
  for (std::int64_t nc = 0; nc < s.n * s.c; ++nc) {
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        taps.clear();
        for (std::int64_t ky = 0; ky < s.kh; ++ky) {
          const std::int64_t iy = oy * s.stride_h - s.pad_h + ky;
          if (iy < 0 || iy >= s.h) continue;
          for (std::int64_t kx = 0; kx < s.kw; ++kx) {
            const std::int64_t ix = ox * s.stride_w - s.pad_w + kx;
            if (ix < 0 || ix >= s.w) continue;
            taps.push_back((nc * s.h + iy) * s.w + ix);
          }
        }
        visit((nc * oh + oy) * ow + ox, taps);
      }
    }
  }
}

}  // namespace

void pool_forward(const PoolShape& s, const double* x, double* y) {
  const double window = static_cast<double>(s.kh * s.kw);
  for_each_window(s, [&](std::int64_t yi, const std::vector<std::int64_t>& taps) {
    if (s.kind == PoolKind::max) {
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t xi : taps) m = std::max(m, x[xi]);
      y[yi] = m;
    } else {
      double sum = 0.0;
      for (std::int64_t xi : taps) sum += x[xi];
      y[yi] = sum / window;
    }
  });
}

void pool_backward(const PoolShape& s, const double* x, const double* dy, double* dx) {
  std::fill(dx, dx + s.n * s.c * s.h * s.w, 0.0);
  const double window = static_cast<double>(s.kh * s.kw);
  for_each_window(s, [&](std::int64_t yi, const std::vector<std::int64_t>& taps) {
    if (taps.empty()) return;
    if (s.kind == PoolKind::max) {
      std::int64_t best = taps.front();
      for (std::int64_t xi : taps) {
        if (x[xi] > x[best]) best = xi;
      }
      dx[best] += dy[yi];
    } else {
      for (std::int64_t xi : taps) dx[xi] += dy[yi] / window;
    }
  });
}

}  // namespace tidepool::reference
