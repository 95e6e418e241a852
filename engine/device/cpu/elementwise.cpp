// Elementwise kernels: residual add (with a fused ReLU too; in f32 or, where
// the table takes it, bf16), copy (flatten and other views that need their
// own buffer) and gradient accumulation for fan-out tensors.
//
// Plain loops: these are bandwidth-bound, GCC vectorises them, and a oneDNN
// primitive per length would only add cache entries. Outputs may alias
// inputs (y == a for an in-place add, acc == x never happens but is still
// well defined), so there is no __restrict.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <omp.h>

#include "engine/device/cpu/bf16.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cpu/parallel_loops.h"

namespace tidepool {

namespace {

// y = a + b, or max(a + b, 0) with `relu`, on bf16 values: summed in f32,
// rounded once (NaN kept).
template <bool kRelu>
void add_bf16(std::int64_t count, const void* a_, const void* b_, void* y_) {
  const auto* a = static_cast<const std::uint16_t*>(a_);
  const auto* b = static_cast<const std::uint16_t*>(b_);
  auto* y = static_cast<std::uint16_t*>(y_);
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) {
    float v = cpu::from_bf16(a[i]) + cpu::from_bf16(b[i]);
    if constexpr (kRelu) v = 0.0f > v ? 0.0f : v;
    y[i] = cpu::to_bf16(v);
  }
}

}  // namespace

void CpuKernels::add_forward(std::int64_t count, DType type, const void* a_, const void* b_, void* y_) {
  require_activation_type(type, "add_forward");
  if (type == DType::bf16) return add_bf16<false>(count, a_, b_, y_);
  const auto* a = static_cast<const float*>(a_);
  const auto* b = static_cast<const float*>(b_);
  auto* y = static_cast<float*>(y_);
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) y[i] = a[i] + b[i];
}

void CpuKernels::add_relu_forward(std::int64_t count, DType type, const void* a_, const void* b_, void* y_) {
  require_activation_type(type, "add_relu_forward");
  if (type == DType::bf16) return add_bf16<true>(count, a_, b_, y_);
  const auto* a = static_cast<const float*>(a_);
  const auto* b = static_cast<const float*>(b_);
  auto* y = static_cast<float*>(y_);
  // max(v, 0) with NaN kept (fp16's loss scaling must see it): one maxps
  // a vector. (oneDNN's ReLU writes v * 0 below zero, -0 rather than +0,
  // which GCC does not vectorise as well: this sweep ran 3x slower.)
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = a[i] + b[i];
    y[i] = 0.0f > v ? 0.0f : v;
  }
}

void copy_elements(std::int64_t count, std::size_t size, const void* x_, void* y_) {
  const auto* x = static_cast<const std::byte*>(x_);
  auto* y = static_cast<std::byte*>(y_);
  // memcpy on identical pointers is undefined behaviour even though it
  // would do nothing, and an in-place flatten asks for exactly that.
  if (count <= 0 || x == y) return;
  const std::size_t bytes = static_cast<std::size_t>(count) * size;
  const bool apart = x + bytes <= y || y + bytes <= x;
  if (!apart || count < kParallelElements) {
    std::memmove(y, x, bytes);
    return;
  }
  // Disjoint (a residual's gradient fanned out to both branches): one
  // memcpy per thread.
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t begin = count * t / threads, end = count * (t + 1) / threads;
    std::memcpy(y + begin * size, x + begin * size, static_cast<std::size_t>(end - begin) * size);
  }
}

void CpuKernels::copy(std::int64_t count, const float* x, float* y) { copy_elements(count, sizeof(float), x, y); }

void CpuKernels::accumulate(std::int64_t count, const float* x, float* acc) {
#pragma omp parallel for simd schedule(static) if (count >= kParallelElements)
  for (std::int64_t i = 0; i < count; ++i) acc[i] += x[i];
}

}  // namespace tidepool
