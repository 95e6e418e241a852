// A cpu device that chooses its convolutions' algorithms by timing them, as
// the cuda device's `p` scheme does, from a fake table of timings: so the
// path of a timed choice through a run (Device::kernel_choices into the
// checkpoint and the machine's record, adopt_kernel_choices on resume and on
// every rank) is checked on a machine without a GPU.
//
// The rules are the cuda device's own (engine/device/kernel_choice.h): an
// adopted choice is taken without timing; otherwise every algorithm is timed
// kTimingSearches times, each keeps its best time and pick_timed decides.
// Only the timings are fake: `FakeTimings` answers how long an algorithm
// takes for a shape in this "process". The kernels that run are the cpu
// device's, so the numbers are the cpu device's whatever was chosen; what a
// test reads is which choices were made, adopted and timed (TimingLog).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/kernel_choice.h"

namespace tidepool::testing {

// Milliseconds algorithm `algo` takes for `shape` in search `search`.
using FakeTimings = std::function<float(const std::string& shape, int algo, int search)>;
inline constexpr int kFakeAlgorithms = 4;

// What a TimingDevice did, kept past the device (a run destroys its device).
struct TimingLog {
  std::mutex mutex;
  std::vector<std::string> timed;    // shapes decided by timing, in order
  std::vector<std::string> adopted;  // shapes decided by an adopted line
};

class TimingDevice final : public Device {
 public:
  TimingDevice(FakeTimings timings, std::shared_ptr<TimingLog> log)
      : kernels_(*this), timings_(std::move(timings)), log_(std::move(log)) {}

  DeviceCaps caps() const override {
    DeviceCaps c = cpu_.caps();
    c.name = "cpu (choosing by fake timings)";
    c.times_kernels = true;
    return c;
  }
  std::vector<std::string> kernel_choices() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> lines;
    for (const auto& [shape, choice] : chosen_) lines.push_back(kernel_choice_line(shape, choice));
    return lines;  // sorted by shape, as the cuda device's are
  }
  void adopt_kernel_choices(const std::vector<std::string>& lines) override {
    std::lock_guard<std::mutex> lock(mutex_);
    adopted_.adopt(lines);
  }
  Kernels& kernels() override { return kernels_; }

  // Everything else is the cpu device's.
  std::byte* reserve_arena(std::size_t bytes) override { return cpu_.reserve_arena(bytes); }
  std::byte* reserve_pinned(std::size_t bytes) override { return cpu_.reserve_pinned(bytes); }
  std::size_t arena_bytes() const override { return cpu_.arena_bytes(); }
  std::size_t pinned_bytes() const override { return cpu_.pinned_bytes(); }
  std::byte* reserve_pageable(std::size_t bytes) override { return cpu_.reserve_pageable(bytes); }
  std::size_t pageable_bytes() const override { return cpu_.pageable_bytes(); }
  void submit(Stream s, std::function<void(Kernels&)> work) override { cpu_.submit(s, std::move(work)); }
  void copy_async(Stream s, void* dst, const void* src, std::size_t bytes) override {
    cpu_.copy_async(s, dst, src, bytes);
  }
  void copy_sync(void* dst, const void* src, std::size_t bytes) override { cpu_.copy_sync(dst, src, bytes); }
  void host_task(Stream s, std::function<void()> work) override { cpu_.host_task(s, std::move(work)); }
  void all_reduce(Stream s, float* data, std::size_t count, Communicator& comm) override {
    cpu_.all_reduce(s, data, count, comm);
  }
  void all_reduce(Stream s, double* data, std::size_t count, Communicator& comm) override {
    cpu_.all_reduce(s, data, count, comm);
  }
  std::unique_ptr<DeviceEvent> record(Stream s) override { return cpu_.record(s); }
  void wait(Stream waiter, const DeviceEvent& e) override { cpu_.wait(waiter, e); }
  void synchronize(const DeviceEvent& e) override { cpu_.synchronize(e); }
  bool done(const DeviceEvent& e) override { return cpu_.done(e); }
  void synchronize() override { cpu_.synchronize(); }
  double elapsed_us(const DeviceEvent& from, const DeviceEvent& to) override { return cpu_.elapsed_us(from, to); }
  double time_us(const DeviceEvent& e) override { return cpu_.time_us(e); }
  double now_us() const override { return cpu_.now_us(); }

 private:
  // The cpu device's kernel table, whose `p` workspace queries (the
  // planner's, before anything runs) decide the shape first, as the cuda
  // device's plan cache does.
  class ChoosingKernels final : public CpuKernels {
   public:
    explicit ChoosingKernels(TimingDevice& device) : device_(device) {}
    std::size_t conv_workspace_bytes(const ConvShape& s, ConvScheme scheme, ConvPass pass) const override {
      if (scheme == ConvScheme::p) device_.decide(shape_text(s, pass));
      return CpuKernels::conv_workspace_bytes(s, scheme, pass);
    }

   private:
    static std::string shape_text(const ConvShape& s, ConvPass pass) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "pass=%d n=%lld c=%lld h=%lld w=%lld k=%lld r=%lld stride=%lld groups=%lld",
                    static_cast<int>(pass), static_cast<long long>(s.n), static_cast<long long>(s.c),
                    static_cast<long long>(s.h), static_cast<long long>(s.w), static_cast<long long>(s.k),
                    static_cast<long long>(s.r), static_cast<long long>(s.stride_h),
                    static_cast<long long>(s.groups));
      return buf;
    }
    TimingDevice& device_;
  };

  struct Timed {
    int algo = 0;
    int math = 0;
    float time_ms = 0;
  };

  // Once per shape per device, as the cuda device's plan cache decides
  // once per process.
  void decide(const std::string& shape) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (chosen_.count(shape)) return;
    if (std::string adopted = adopted_.adopted(shape); !adopted.empty()) {
      chosen_[shape] = adopted;
      std::lock_guard<std::mutex> log_lock(log_->mutex);
      log_->adopted.push_back(shape);
      return;
    }
    std::vector<Timed> timed;
    for (int search = 0; search < kTimingSearches; ++search)
      for (int algo = 0; algo < kFakeAlgorithms; ++algo)
        keep_best_time(timed, Timed{algo, 0, timings_(shape, algo, search)});
    const std::size_t pick = pick_timed(timed);
    chosen_[shape] = std::to_string(timed[pick].algo) + " fma";
    std::lock_guard<std::mutex> log_lock(log_->mutex);
    log_->timed.push_back(shape);
  }

  CpuDevice cpu_;
  ChoosingKernels kernels_;
  FakeTimings timings_;
  std::shared_ptr<TimingLog> log_;
  mutable std::mutex mutex_;
  KernelChoiceRecord adopted_;
  std::map<std::string, std::string> chosen_;
};

}  // namespace tidepool::testing
