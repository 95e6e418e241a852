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
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/parallel_loops.h"

namespace tidepool {
namespace {

constexpr std::int64_t kMostBlock = 16;  // oneDNN's largest channel block (AVX-512)
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
    if (s.channel_block > kMostBlock)
      throw std::invalid_argument(std::string(op) + ": channel blocks of up to " + std::to_string(kMostBlock) +
                                  ", not " + std::to_string(s.channel_block));
    g.block = s.channel_block;
  }
  g.groups = s.c / g.block;
  return g;
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

// Calls f(ch, value_a, value_b) for every element of channel group g's
// planes, channels in lanes; a and b are two tensors of the same layout.
// Returns per lane the sums of fa(a, b) and fb(a, b), in double.
template <class Fa, class Fb>
void sum_group(const Groups& l, std::int64_t n, std::int64_t g, const float* a, const float* b, Fa fa, Fb fb,
               double* sa, double* sb) {
  if (l.block > 1) {
    double acc_a[kMostBlock] = {}, acc_b[kMostBlock] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t base = l.offset(i, g);
      for (std::int64_t p = 0; p < l.hw; ++p)
        for (std::int64_t j = 0; j < l.block; ++j) {
          const std::int64_t e = base + p * l.block + j;
          acc_a[j] += fa(j, a[e], b ? b[e] : 0.0f);
          acc_b[j] += fb(j, a[e], b ? b[e] : 0.0f);
        }
    }
    for (std::int64_t j = 0; j < l.block; ++j) sa[j] = acc_a[j], sb[j] = acc_b[j];
    return;
  }
  double acc_a[kPlainLanes] = {}, acc_b[kPlainLanes] = {};
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t base = l.offset(i, g);
    for (std::int64_t p = 0; p < l.hw; ++p) {
      const std::int64_t e = base + p;
      acc_a[p % kPlainLanes] += fa(0, a[e], b ? b[e] : 0.0f);
      acc_b[p % kPlainLanes] += fb(0, a[e], b ? b[e] : 0.0f);
    }
  }
  double ta = 0, tb = 0;
  for (std::int64_t k = 0; k < kPlainLanes; ++k) ta += acc_a[k], tb += acc_b[k];
  sa[0] = ta, sb[0] = tb;
}

}  // namespace

void CpuKernels::batchnorm_sums(const BatchNormShape& s, const float* x, double* sums) {
  const Groups l = groups_of(s, "batchnorm_sums");
#pragma omp parallel for schedule(static) if (s.n * s.c * s.h * s.w >= kParallelElements)
  for (std::int64_t g = 0; g < l.groups; ++g) {
    const std::int64_t ch = g * l.block;
    sum_group(
        l, s.n, g, x, nullptr, [](std::int64_t, float v, float) { return static_cast<double>(v); },
        [](std::int64_t, float v, float) { return static_cast<double>(v) * v; }, sums + ch, sums + s.c + ch);
  }
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

  if (running_mean == nullptr || running_var == nullptr) return;
  // As batchnorm_forward_train (batchnorm.cpp), over the summed count.
  const float unbias = count > 1.0 ? static_cast<float>(count / (count - 1.0)) : 1.0f;
  const float m = s.momentum;
  for (std::int64_t ch = 0; ch < s.c; ++ch) {
    running_mean[ch] = (1.0f - m) * running_mean[ch] + m * saved_mean[ch];
    running_var[ch] = (1.0f - m) * running_var[ch] + m * saved_var[ch] * unbias;
  }
}

void CpuKernels::batchnorm_backward_sums(const BatchNormShape& s, const float* x, const float* dy,
                                         const float* saved_mean, const float* saved_var, double* sums,
                                         float* dgamma, float* dbeta) {
  const Groups l = groups_of(s, "batchnorm_backward_sums");
#pragma omp parallel for schedule(static) if (s.n * s.c * s.h * s.w >= kParallelElements)
  for (std::int64_t g = 0; g < l.groups; ++g) {
    const std::int64_t ch = g * l.block;
    double mean[kMostBlock];
    for (std::int64_t j = 0; j < l.block; ++j) mean[j] = saved_mean[ch + j];
    // Σdy·(x - mean) first, times 1/σ once per channel after.
    sum_group(
        l, s.n, g, dy, x, [](std::int64_t, float d, float) { return static_cast<double>(d); },
        [&mean](std::int64_t j, float d, float v) { return static_cast<double>(d) * (v - mean[j]); }, sums + ch,
        sums + s.c + ch);
    for (std::int64_t j = 0; j < l.block; ++j) {
      const double invstd = 1.0 / std::sqrt(static_cast<double>(saved_var[ch + j]) + s.eps);
      sums[s.c + ch + j] *= invstd;
      dgamma[ch + j] = static_cast<float>(sums[s.c + ch + j]);
      dbeta[ch + j] = static_cast<float>(sums[ch + j]);
    }
  }
  sums[2 * s.c] = count_of(s);
}

void CpuKernels::batchnorm_backward_with_sums(const BatchNormShape& s, const float* x, const float* dy,
                                              const float* gamma, const float* saved_mean, const float* saved_var,
                                              const double* sums, float* dx) {
  const Groups l = groups_of(s, "batchnorm_backward_with_sums");
  const double count = summed_count(sums, s.c, "batchnorm_backward_with_sums");
  // dx = A (dy - mean(dy)) + B (x - mean) per channel, with A = gamma/σ and
  // B = -A/σ · mean(dy·x̂): x - mean rather than B x + constant, which
  // would cancel where the mean is large against the spread.
  constexpr std::int64_t kChunk = 1024;  // channels per pass over the coefficients (a few KiB)
  for (std::int64_t first = 0; first < s.c; first += kChunk) {
    const std::int64_t last = std::min(s.c, first + kChunk);
    float a[kChunk], b[kChunk], mdy[kChunk], mean[kChunk];
    for (std::int64_t ch = first; ch < last; ++ch) {
      const double invstd = 1.0 / std::sqrt(static_cast<double>(saved_var[ch]) + s.eps);
      const double ga = static_cast<double>(gamma[ch]) * invstd;
      a[ch - first] = static_cast<float>(ga);
      b[ch - first] = static_cast<float>(-ga * invstd * (sums[s.c + ch] / count));
      mdy[ch - first] = static_cast<float>(sums[ch] / count);
      mean[ch - first] = saved_mean[ch];
    }
    const std::int64_t g_first = first / l.block, g_last = last / l.block;
#pragma omp parallel for collapse(2) schedule(static) if (s.n * s.c * s.h * s.w >= kParallelElements)
    for (std::int64_t i = 0; i < s.n; ++i)
      for (std::int64_t g = g_first; g < g_last; ++g) {
        const std::int64_t base = l.offset(i, g);
        const std::int64_t c0 = g * l.block - first;
        for (std::int64_t p = 0; p < l.hw; ++p)
          for (std::int64_t j = 0; j < l.block; ++j) {
            const std::int64_t e = base + p * l.block + j, k = c0 + j;
            dx[e] = a[k] * (dy[e] - mdy[k]) + b[k] * (x[e] - mean[k]);
          }
      }
  }
}

}  // namespace tidepool
