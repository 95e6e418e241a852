// Conversions between f32 and the 16-bit types, and 16-bit accumulation.
//
// Plain loops, like the other bandwidth-bound kernels: oneDNN 2.6's bf16
// and f16 reorders on a processor without AVX-512 are its reference
// implementation, 50 ns an element (measured: 2M values in 100 ms), where
// these loops take under 1 ns. bf16 is the upper half of an f32, rounded by
// integer arithmetic; f16 uses the F16C instructions where the processor
// has them (every x86 since 2013) and the compiler's _Float16 otherwise.
// Both round to nearest even, a value beyond f16's range becomes ±inf, and
// a NaN stays a NaN.
#include <immintrin.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/device/cpu/bf16.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/parallel_loops.h"

namespace tidepool {
namespace {

using cpu::from_bf16;
using cpu::to_bf16;

float from_f16(std::uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, sizeof v);
  return static_cast<float>(v);
}

std::uint16_t to_f16(float f) {
  const _Float16 v = static_cast<_Float16>(f);
  std::uint16_t h;
  std::memcpy(&h, &v, sizeof h);
  return h;
}

bool has_f16c() {
  // __builtin_cpu_init first: this may run before libgcc's own initialiser.
  static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("f16c"));
  return has;
}

// Eight at a time with F16C, y = x * scale.
__attribute__((target("avx,f16c"))) void f32_to_f16_f16c(std::int64_t n, const float* x, std::uint16_t* y,
                                                          float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = to_f16(x[i] * scale);
}

__attribute__((target("avx,f16c"))) void f16_to_f32_f16c(std::int64_t n, const std::uint16_t* x, float* y,
                                                          float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, s));
  }
  for (; i < n; ++i) y[i] = from_f16(x[i]) * scale;
}

bool has_avx2() {
  static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return has;
}

// bf16 eight at a time with AVX2, the same integer arithmetic as to_bf16
// and from_bf16 (so the same bits): the build's baseline is SSE2, and these
// loops widen and round every 16-bit activation of a bf16 step.
__attribute__((target("avx2"))) inline __m128i round_bf16x8(__m256 f) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
  const __m256i u = _mm256_castps_si256(f);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, half), odd), 16);
  const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
  const __m256i v = _mm256_blendv_epi8(rounded, quieted, nan);
  // Each lane holds 0..0xffff: pack the two 128-bit halves' words in order.
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08));
}

__attribute__((target("avx2"))) inline __m256 widen_bf16x8(const std::uint16_t* x) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

__attribute__((target("avx2"))) void f32_to_bf16_avx2(std::int64_t n, const float* x, std::uint16_t* y,
                                                      float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), round_bf16x8(_mm256_mul_ps(_mm256_loadu_ps(x + i), s)));
  for (; i < n; ++i) y[i] = to_bf16(x[i] * scale);
}

__attribute__((target("avx2"))) void bf16_to_f32_avx2(std::int64_t n, const std::uint16_t* x, float* y,
                                                      float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(widen_bf16x8(x + i), s));
  for (; i < n; ++i) y[i] = from_bf16(x[i]) * scale;
}

// acc += x on bf16 values, summed in f32 and rounded once.
__attribute__((target("avx2"))) void accumulate_bf16_avx2(std::int64_t n, const std::uint16_t* x,
                                                          std::uint16_t* acc) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + i),
                     round_bf16x8(_mm256_add_ps(widen_bf16x8(acc + i), widen_bf16x8(x + i))));
  for (; i < n; ++i) acc[i] = to_bf16(from_bf16(acc[i]) + from_bf16(x[i]));
}

// Splits [0, count) over the OpenMP pool in runs of whole vectors (the
// split never changes a bit: each element is converted alone).
template <class Run>
void split(std::int64_t count, Run run) {
  if (count < kParallelElements) {
    run(std::int64_t{0}, count);
    return;
  }
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t begin = count * t / threads / 8 * 8;
    const std::int64_t end = t + 1 == threads ? count : count * (t + 1) / threads / 8 * 8;
    run(begin, end - begin);
  }
}

float load(const void* p, std::int64_t i, DType t) {
  switch (t) {
    case DType::bf16: return from_bf16(static_cast<const std::uint16_t*>(p)[i]);
    case DType::f16: return from_f16(static_cast<const std::uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

void store(void* p, std::int64_t i, DType t, float v) {
  switch (t) {
    case DType::bf16: static_cast<std::uint16_t*>(p)[i] = to_bf16(v); break;
    case DType::f16: static_cast<std::uint16_t*>(p)[i] = to_f16(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

void check_float_type(DType t, const char* op) {
  if (t == DType::i32) throw std::invalid_argument(std::string(op) + ": i32 is not a floating-point type");
}

}  // namespace

void CpuKernels::convert(std::int64_t count, DType from, const void* x, DType to, void* y, float scale) {
  check_float_type(from, "convert");
  check_float_type(to, "convert");
  if (count <= 0) return;
  const auto* x16 = static_cast<const std::uint16_t*>(x);
  auto* y16 = static_cast<std::uint16_t*>(y);
  const auto* xf = static_cast<const float*>(x);
  auto* yf = static_cast<float*>(y);
  // A copy within a type (a residual's gradient handed to its second
  // input): the bytes as they are.
  if (from == to && scale == 1.0f) {
    copy_elements(count, from == DType::f32 ? sizeof(float) : sizeof(std::uint16_t), x, y);
    return;
  }
  // The common pairs in tight loops the compiler vectorises; the rest
  // element by element.
  if (from == DType::f32 && to == DType::bf16 && has_avx2()) {
    split(count, [&](std::int64_t at, std::int64_t n) { f32_to_bf16_avx2(n, xf + at, y16 + at, scale); });
  } else if (from == DType::bf16 && to == DType::f32 && has_avx2()) {
    split(count, [&](std::int64_t at, std::int64_t n) { bf16_to_f32_avx2(n, x16 + at, yf + at, scale); });
  } else if (from == DType::f32 && to == DType::bf16) {
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
    for (std::int64_t i = 0; i < count; ++i) y16[i] = to_bf16(xf[i] * scale);
  } else if (from == DType::bf16 && to == DType::f32) {
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
    for (std::int64_t i = 0; i < count; ++i) yf[i] = from_bf16(x16[i]) * scale;
  } else if (from == DType::f32 && to == DType::f32) {  // data-parallel: a bucket's sums times 1/ranks, every iteration
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
    for (std::int64_t i = 0; i < count; ++i) yf[i] = xf[i] * scale;
  } else if (from == DType::f32 && to == DType::f16 && has_f16c()) {
    f32_to_f16_f16c(count, xf, y16, scale);
  } else if (from == DType::f16 && to == DType::f32 && has_f16c()) {
    f16_to_f32_f16c(count, x16, yf, scale);
  } else {
    for (std::int64_t i = 0; i < count; ++i) store(y, i, to, load(x, i, from) * scale);
  }
}

void CpuKernels::accumulate_16bit(std::int64_t count, DType type, const void* x, void* acc) {
  if (type != DType::bf16 && type != DType::f16)
    throw std::invalid_argument("accumulate_16bit: " + std::string(to_string(type)) + " is not a 16-bit type");
  if (type == DType::bf16 && has_avx2()) {
    const auto* x16 = static_cast<const std::uint16_t*>(x);
    auto* acc16 = static_cast<std::uint16_t*>(acc);
    split(count, [&](std::int64_t at, std::int64_t n) { accumulate_bf16_avx2(n, x16 + at, acc16 + at); });
    return;
  }
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) store(acc, i, type, load(acc, i, type) + load(x, i, type));
}

}  // namespace tidepool
