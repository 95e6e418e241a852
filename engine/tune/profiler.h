// Dynamic information (AccUDNN §3.2): each compute step's time and each
// copy's time, measured on a device at several batch sizes, one profile
// out of them (engine/perf/fit.h fits it). The iterations train, as the
// paper's do; what they train is thrown away here (`tidepool profile`).
//
//   Profile p = measure_profile([] { return std::make_unique<CpuDevice>(); }, net,
//                               {.batches = {16, 32, 64, 85, 128}}, "cpu: this machine");
//   save_profile(p, "cpu.json");
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/network.h"
#include "engine/device/device.h"
#include "engine/observe/events.h"
#include "engine/perf/profile.h"
#include "engine/schedule/memory_settings.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

// Keeps every span it is told about.
class SpanRecorder final : public EventSink {
 public:
  void on_span(const SpanEvent& e) override { spans_.push_back(e); }
  const std::vector<SpanEvent>& spans() const { return spans_; }
  void clear() { spans_.clear(); }

 private:
  std::vector<SpanEvent> spans_;
};

// The samples of one batch size, from the spans of iterations of
// `schedule`: per compute step the median of its spans (one sample), and
// every copy of an offload or prefetch. `queries`: the device's kernels,
// for the workspace sizes the static analysis asks.
void add_samples(Profile& profile, const Network& network, const Schedule& schedule,
                 std::span<const SpanEvent> spans, const KernelQueries& queries);

// The paper's batch sizes for profiling: 1/8, 1/4, 1/2, 2/3 and 1 of the
// largest (duplicates and zeros dropped).
std::vector<std::int64_t> profiling_batches(std::int64_t largest);

struct ProfilingOptions {
  std::vector<std::int64_t> batches;
  int warmup = 1;       // untimed iterations first (oneDNN builds its primitives)
  int iterations = 3;   // timed iterations per batch; the median is kept
  // AccUDNN profiles with the naive strategy, everything offloaded, so that
  // every copy is measured too.
  MemorySettings memory{.mode = OffloadMode::all};
  std::uint64_t seed = 1;
  std::function<void(const std::string&)> progress;  // a line per batch size
};

// A fresh device per batch size (a device reserves its memory once).
// Throws what the trainer throws (a batch that does not fit the device).
Profile measure_profile(const std::function<std::unique_ptr<Device>()>& make_device, const Network& network,
                        const ProfilingOptions& options, std::string name);

}  // namespace tidepool
