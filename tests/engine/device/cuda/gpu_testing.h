// Helpers for the cuda device's tests: skip without a GPU, device buffers
// carved from one arena, uploads and downloads, and running a kernel call
// to completion.
//
// Every test in this folder either derives from GpuTest (whose SetUp skips)
// or starts with TIDEPOOL_REQUIRE_GPU(), so on a machine without a GPU the
// whole binary reports skipped tests, never failures.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/cuda/cuda_device.h"
#include "engine/device/cuda/cuda_kernels.h"
#include "testing/kernel_testing.h"

// Skips the calling test (GTEST_SKIP returns from the function it is in)
// when no CUDA device is usable, naming the reason.
#define TIDEPOOL_REQUIRE_GPU()                              \
  do {                                                      \
    std::string tidepool_why_;                              \
    if (::tidepool::cuda_device_count(&tidepool_why_) == 0) \
      GTEST_SKIP() << "no CUDA device: " << tidepool_why_;  \
  } while (0)

namespace tidepool::testing {

// A device per test, with a bump allocator over its arena. The arena is
// reserved on the first upload or alloc, so a test that wants the `p`
// scheme to measure asks for workspace sizes first.
class GpuTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kArenaBytes = std::size_t{2} << 30;

  void SetUp() override {
    TIDEPOOL_REQUIRE_GPU();
    device_ = std::make_unique<CudaDevice>();
  }

  CudaDevice& device() { return *device_; }
  CudaKernels& kernels() { return device_->cuda_kernels(); }

  // Uninitialised device memory for `count` elements (256-byte aligned,
  // like the allocators' offsets).
  template <class T>
  T* alloc(std::size_t count) {
    if (!arena_) arena_ = device_->reserve_arena(kArenaBytes);
    const std::size_t bytes = (count * sizeof(T) + 255) / 256 * 256;
    if (used_ + bytes > kArenaBytes) throw std::runtime_error("test arena exhausted");
    T* p = reinterpret_cast<T*>(arena_ + used_);
    used_ += bytes;
    return p;
  }
  // Hands the whole arena out again; earlier pointers become invalid. Only
  // between run()s, which wait for the device.
  void reset_arena() { used_ = 0; }
  void* alloc_bytes(std::size_t bytes) {
    return bytes ? static_cast<void*>(alloc<std::byte>(bytes)) : nullptr;
  }

  template <class T>
  T* upload(const std::vector<T>& host) {
    T* p = alloc<T>(host.size());
    device_->copy_async(Stream::compute, p, host.data(), host.size() * sizeof(T));
    device_->synchronize();
    return p;
  }

  // Overwrites device memory that alloc/upload handed out.
  template <class T>
  void write(T* dst, const std::vector<T>& host) {
    device_->copy_async(Stream::compute, dst, host.data(), host.size() * sizeof(T));
    device_->synchronize();
  }

  // Output buffers start as NaN so a kernel that skips an element fails.
  float* nan_buffer(std::size_t count) { return upload(nan_filled(count)); }

  template <class T>
  std::vector<T> download(const T* p, std::size_t count) {
    std::vector<T> host(count);
    device_->copy_async(Stream::compute, host.data(), p, count * sizeof(T));
    device_->synchronize();
    return host;
  }

  // Runs kernel calls on the compute stream and waits for them.
  void run(const std::function<void(Kernels&)>& work) {
    device_->submit(Stream::compute, work);
    device_->synchronize();
  }

  CpuKernels cpu;  // the reference device's table

 private:
  std::unique_ptr<CudaDevice> device_;
  std::byte* arena_ = nullptr;
  std::size_t used_ = 0;
};

// Same bits, element for element (NaN never equals).
inline ::testing::AssertionResult bit_equal(const std::vector<float>& gpu,
                                            const std::vector<float>& cpu) {
  if (gpu.size() != cpu.size())
    return ::testing::AssertionFailure() << "size " << gpu.size() << " != " << cpu.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    if (std::memcmp(&gpu[i], &cpu[i], sizeof(float)) != 0) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << gpu.size() << " elements differ; first at [" << first
         << "]: " << gpu[first] << " (gpu) vs " << cpu[first] << " (cpu)";
}

// The gpu result against the cpu device's result, with the op's tolerance.
inline ::testing::AssertionResult close_to_cpu(const std::vector<float>& gpu,
                                               const std::vector<float>& cpu, double rtol,
                                               double atol) {
  return all_close(gpu, to_double(cpu), rtol, atol);
}

}  // namespace tidepool::testing
