// Batch normalisation over every rank's batch (--sync-bn) on the cpu
// device: the per-channel sums each rank contributes, and the passes that
// finish with the sums of all of them (kernels.h, batchnorm_sums).
//
// oneDNN cannot help with the halves: its training primitives compute
// their statistics and their backward reductions inside, over the one
// batch they see. So the sums are plain loops in double, and so is dx;
// only the normalisation itself is oneDNN's inference primitive, given the
// summed statistics.
//
// Layout: channel ch of a channel-blocked tensor (block b) sits in group
// g = ch / b at lane ch % b, element (n, g, p, lane) at
// ((n * groups + g) * h·w + p) * b + lane; NCHW is the same with b = 1. The
// loops split over the groups, one thread summing a group's channels in a
// fixed order, so the sums are the same bits on any number of threads.
//
// Cost: on resnet20's largest batch norm at 64 images a rank (16 channels
// of 32x32, blocked by 8; one thread, the build's SSE2 baseline, where
// oneDNN jits AVX2), the forward halves took 0.63 ms against oneDNN's
// fused 0.43 ms and the backward halves 1.1-1.2 ms against 0.43 ms: over
// resnet20's 21 batch norms about 10 ms of an iteration of some 350 ms.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/parallel_loops.h"
#include "engine/device/cpu/running_statistics.h"

namespace tidepool {
namespace {

// Independent accumulators per NCHW channel, so that a sum over a plane is
// not one chain of dependent double additions.
constexpr std::int64_t kPlainLanes = 8;

struct Groups {
  std::int64_t block = 1, groups = 1, hw = 1;
  std::int64_t offset(std::int64_t n, std::int64_t g) const { return (n * groups + g) * hw * block; }
};

Groups groups_of(const BatchNormShape& s, const char* op) {
  validate(s);
  Groups g;
  g.hw = s.h * s.w;
  if (channel_blocked(s.c, s.channel_block)) {
    if (s.channel_block != 8 && s.channel_block != 16)
      throw std::invalid_argument(std::string(op) + ": channel blocks of 8 or 16 (oneDNN's), not " +
                                  std::to_string(s.channel_block));
    g.block = s.channel_block;
  }
  g.groups = s.c / g.block;
  return g;
}

// Calls f with the layout's block as a constant (1 for NCHW), so that the
// loops over a group's lanes have a trip count the compiler vectorises.
template <class F>
void with_block(std::int64_t block, F f) {
  if (block == 8)
    f(std::integral_constant<std::int64_t, 8>{});
  else if (block == 16)
    f(std::integral_constant<std::int64_t, 16>{});
  else
    f(std::integral_constant<std::int64_t, 1>{});
}

// The values per channel, as a double the sums carry along.
double count_of(const BatchNormShape& s) { return static_cast<double>(s.n) * static_cast<double>(s.h * s.w); }

// The summed count, refused when it cannot have come from a sums kernel.
double summed_count(const double* sums, std::int64_t c, const char* op) {
  const double count = sums[2 * c];
  if (!(count >= 1))
    throw std::logic_error(std::string(op) + ": the sums count " + std::to_string(count) +
                           " values per channel; they were not written by batchnorm_sums");
  return count;
}

// Channel group g's sums of fa(lane, a, b) and fb(lane, a, b) over its n
// planes, per lane (channel), in double; a and b are two tensors of the
// layout. NCHW (B = 1) sums each plane in kPlainLanes interleaved
// accumulators.
template <std::int64_t B, class Fa, class Fb>
void sum_group(const Groups& l, std::int64_t n, std::int64_t g, const float* a, const float* b, Fa fa, Fb fb,
               double* sa, double* sb) {
  constexpr std::int64_t kLanes = B > 1 ? B : kPlainLanes;
  double acc_a[kLanes] = {}, acc_b[kLanes] = {};
  const std::int64_t run = l.hw * B;  // a group's floats per image
  const std::int64_t whole = run / kLanes * kLanes;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* pa = a + l.offset(i, g);
    const float* pb = b + l.offset(i, g);
    for (std::int64_t e = 0; e < whole; e += kLanes)
      for (std::int64_t j = 0; j < kLanes; ++j) {
        const std::int64_t lane = B > 1 ? j : 0;
        acc_a[j] += fa(lane, pa[e + j], pb[e + j]);
        acc_b[j] += fb(lane, pa[e + j], pb[e + j]);
      }
    for (std::int64_t e = whole; e < run; ++e) {  // NCHW's tail (a blocked run is whole lanes)
      acc_a[e - whole] += fa(0, pa[e], pb[e]);
      acc_b[e - whole] += fb(0, pa[e], pb[e]);
    }
  }
  if constexpr (B > 1) {
    for (std::int64_t j = 0; j < B; ++j) sa[j] = acc_a[j], sb[j] = acc_b[j];
  } else {
    double ta = 0, tb = 0;
    for (std::int64_t j = 0; j < kLanes; ++j) ta += acc_a[j], tb += acc_b[j];
    sa[0] = ta, sb[0] = tb;
  }
}

}  // namespace

void CpuKernels::batchnorm_sums(const BatchNormShape& s, const float* x, double* sums) {
  const Groups l = groups_of(s, "batchnorm_sums");
  with_block(l.block, [&](auto block) {
    constexpr std::int64_t B = decltype(block)::value;
#pragma omp parallel for schedule(static) if (s.n * s.c * s.h * s.w >= kParallelElements)
    for (std::int64_t g = 0; g < l.groups; ++g) {
      const std::int64_t ch = g * B;
      sum_group<B>(
          l, s.n, g, x, x, [](std::int64_t, float v, float) { return static_cast<double>(v); },
          [](std::int64_t, float v, float) { return static_cast<double>(v) * v; }, sums + ch, sums + s.c + ch);
    }
  });
  sums[2 * s.c] = count_of(s);
}

void CpuKernels::batchnorm_forward_with_sums(const BatchNormShape& s, const float* x, const float* gamma,
                                             const float* beta, const double* sums, float* y, float* saved_mean,
                                             float* saved_var, float* running_mean, float* running_var) {
  validate(s);
  const double count = summed_count(sums, s.c, "batchnorm_forward_with_sums");
  for (std::int64_t ch = 0; ch < s.c; ++ch) {
    const double mean = sums[ch] / count;
    // E[x²] - E[x]² can come out a rounding below 0 for a constant channel.
    saved_mean[ch] = static_cast<float>(mean);
    saved_var[ch] = static_cast<float>(std::max(sums[s.c + ch] / count - mean * mean, 0.0));
  }
  batchnorm_forward_infer(s, x, gamma, beta, saved_mean, saved_var, y);
  update_running_statistics(s, count, saved_mean, saved_var, running_mean, running_var);  // over the summed count
}

void CpuKernels::batchnorm_backward_sums(const BatchNormShape& s, const float* x, const float* dy,
                                         const float* saved_mean, const float* saved_var, double* sums,
                                         float* dgamma, float* dbeta) {
  const Groups l = groups_of(s, "batchnorm_backward_sums");
  with_block(l.block, [&](auto block) {
    constexpr std::int64_t B = decltype(block)::value;
#pragma omp parallel for schedule(static) if (s.n * s.c * s.h * s.w >= kParallelElements)
    for (std::int64_t g = 0; g < l.groups; ++g) {
      const std::int64_t ch = g * B;
      double mean[B];
      for (std::int64_t j = 0; j < B; ++j) mean[j] = saved_mean[ch + j];
      // Σdy·(x - mean) first, times 1/σ once per channel after.
      sum_group<B>(
          l, s.n, g, dy, x, [](std::int64_t, float d, float) { return static_cast<double>(d); },
          [&mean](std::int64_t j, float d, float v) { return static_cast<double>(d) * (v - mean[j]); }, sums + ch,
          sums + s.c + ch);
      for (std::int64_t j = 0; j < B; ++j) {
        const double invstd = 1.0 / std::sqrt(static_cast<double>(saved_var[ch + j]) + s.eps);
        sums[s.c + ch + j] *= invstd;
        dgamma[ch + j] = static_cast<float>(sums[s.c + ch + j]);
        dbeta[ch + j] = static_cast<float>(sums[ch + j]);
      }
    }
  });
  sums[2 * s.c] = count_of(s);
}

void CpuKernels::batchnorm_backward_with_sums(const BatchNormShape& s, const float* x, const float* dy,
                                              const float* gamma, const float* saved_mean, const float* saved_var,
                                              const double* sums, float* dx) {
  const Groups l = groups_of(s, "batchnorm_backward_with_sums");
  const double count = summed_count(sums, s.c, "batchnorm_backward_with_sums");
  // dx = A (dy - mean(dy)) + B (x - mean) per channel, with A = gamma/σ and
  // B = -A/σ · mean(dy·x̂): x - mean rather than B x + a constant, which
  // would cancel where the mean is large against the spread.
  with_block(l.block, [&](auto block) {
    constexpr std::int64_t B = decltype(block)::value;
#pragma omp parallel for collapse(2) schedule(static) if (s.n * s.c * s.h * s.w >= kParallelElements)
    for (std::int64_t i = 0; i < s.n; ++i)
      for (std::int64_t g = 0; g < l.groups; ++g) {
        float a[B], b[B], mdy[B], mean[B];
        for (std::int64_t j = 0; j < B; ++j) {
          const std::int64_t ch = g * B + j;
          const double invstd = 1.0 / std::sqrt(static_cast<double>(saved_var[ch]) + s.eps);
          const double ga = static_cast<double>(gamma[ch]) * invstd;
          a[j] = static_cast<float>(ga);
          b[j] = static_cast<float>(-ga * invstd * (sums[s.c + ch] / count));
          mdy[j] = static_cast<float>(sums[ch] / count);
          mean[j] = saved_mean[ch];
        }
        const std::int64_t base = l.offset(i, g);
        for (std::int64_t p = 0; p < l.hw; ++p)
          for (std::int64_t j = 0; j < B; ++j) {
            const std::int64_t e = base + p * B + j;
            dx[e] = a[j] * (dy[e] - mdy[j]) + b[j] * (x[e] - mean[j]);
          }
      }
  });
}

}  // namespace tidepool
