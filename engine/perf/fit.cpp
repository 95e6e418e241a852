#include "engine/perf/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tidepool {

namespace {

struct Point {
  double x, y;  // log flops, log µs
};

// log t = log f − log P + slope · max(0, xb − log f) with the break xb
// fixed: least squares for a = −log P and the slope, the slope kept in
// [0, 1]. Returns the squared error.
double fit_with_break(const std::vector<Point>& pts, double xb, double& a, double& slope) {
  double n = 0, sh = 0, shh = 0, sr = 0, shr = 0;
  for (const Point& p : pts) {
    const double h = std::max(0.0, xb - p.x), r = p.y - p.x;
    n += 1;
    sh += h;
    shh += h * h;
    sr += r;
    shr += h * r;
  }
  const double det = n * shh - sh * sh;
  slope = det > 1e-12 ? (n * shr - sh * sr) / det : 0.0;
  slope = std::clamp(slope, 0.0, 1.0);
  a = (sr - slope * sh) / n;
  double err = 0;
  for (const Point& p : pts) {
    const double d = p.y - p.x - a - slope * std::max(0.0, xb - p.x);
    err += d * d;
  }
  return err;
}

}  // namespace

ClassFit fit_class(std::span<const ComputeSample> samples) {
  if (samples.empty()) throw std::invalid_argument("fit_class: no samples");
  std::vector<Point> pts;
  for (const ComputeSample& s : samples) {
    if (!(s.us > 0) || !(s.flops > 0))
      throw std::invalid_argument("fit_class: a sample of " + std::string(to_string(s.work_class)) + " (" + s.layer +
                                  ") took no time or did no work");
    pts.push_back({std::log(s.flops), std::log(s.us)});
  }
  std::vector<double> breaks;
  for (const Point& p : pts) breaks.push_back(p.x);
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
  // Also halfway between neighbours: the knee rarely sits on a sample.
  const std::size_t n = breaks.size();
  for (std::size_t i = 0; i + 1 < n; ++i) breaks.push_back(0.5 * (breaks[i] + breaks[i + 1]));
  double best = std::numeric_limits<double>::infinity(), best_a = 0, best_slope = 0, best_break = breaks.front();
  for (double xb : breaks) {
    double a = 0, slope = 0;
    const double err = fit_with_break(pts, xb, a, slope);
    // Ties go to the smaller break: the simpler curve.
    if (err < best - 1e-12 || (std::abs(err - best) <= 1e-12 && xb < best_break)) {
      best = err;
      best_a = a;
      best_slope = slope;
      best_break = xb;
    }
  }
  ClassFit f;
  // t in µs and f in FLOPs: P = f / t (FLOPs per µs) = e^(−a); GFLOP/s = P · 1e-3.
  f.peak_gflops = std::exp(-best_a) * 1e-3;
  f.slope = best_slope;
  f.saturation_flops = best_slope > 0 ? std::exp(best_break) : 0;
  f.samples = static_cast<int>(samples.size());
  return f;
}

LinkFit fit_link(std::span<const CopySample> samples) {
  if (samples.empty()) throw std::invalid_argument("fit_link: no samples");
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const CopySample& s : samples) {
    const double x = static_cast<double>(s.bytes), y = s.us;
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double det = n * sxx - sx * sx;
  double per_byte = 0, latency = 0;
  if (det > 0) {
    per_byte = (n * sxy - sx * sy) / det;
    latency = (sy - per_byte * sx) / n;
  }
  if (det <= 0 || latency < 0) {  // one size only, or a negative intercept: through the origin
    latency = 0;
    per_byte = sxx > 0 ? sxy / sxx : 0;
  }
  if (!(per_byte > 0)) throw std::invalid_argument("fit_link: the copies took no time per byte");
  return {latency, 1e-3 / per_byte, static_cast<int>(samples.size())};
}

void fit_profile(Profile& profile) {
  for (const Choice<WorkClass>& c : kWorkClasses) {
    std::vector<ComputeSample> of_class;
    for (const ComputeSample& s : profile.compute_samples)
      if (s.work_class == c.value && s.kernels > 0) of_class.push_back(s);
    if (!of_class.empty()) profile.fit(c.value) = fit_class(of_class);
  }
  for (bool to_host : {true, false}) {
    std::vector<CopySample> dir;
    for (const CopySample& s : profile.copy_samples)
      if (s.to_host == to_host && s.bytes > 0) dir.push_back(s);
    if (!dir.empty()) (to_host ? profile.to_host : profile.to_device) = fit_link(dir);
  }
}

}  // namespace tidepool
