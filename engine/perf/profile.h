// A device's performance profile (AccUDNN §3.3): per class of work, the
// throughput curve fitted to measured layer times (Fig. 5: throughput grows
// with a kernel's FLOPs until a saturation point, then stays flat), and the
// host link as latency plus bandwidth per direction (eq. 5). A profile is a
// JSON file: measured on one machine (`tidepool profile`, or a run's first
// iterations) it drives planning and the sim device anywhere; the ones in
// profiles/ are derived from GPUs' published specifications
// (engine/perf/spec_profiles.h), and each file says which it is.
//
//   Profile p = load_profile("profiles/m40.json");
//   PerfModel model(p);                        // engine/perf/perf_model.h
//   double us = model.compute_us(work);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/device/gpu_queries.h"
#include "engine/perf/work.h"

namespace tidepool {

// A step's time is kernels·launch_us + flops / throughput(flops), with
//   throughput(f) = peak · min(1, f / saturation)^slope.
// slope 0: no growth (a flat curve); slope 1: below saturation the time is
// flat at saturation / peak (a fixed cost however small the step).
struct ClassFit {
  double peak_gflops = 0;       // 1e9 of the class's FLOPs per second, at and above saturation
  double saturation_flops = 0;  // 0: saturated from the smallest step on
  double slope = 0;             // 0 ≤ slope ≤ 1
  double launch_us = 0;         // per kernel launched
  int samples = 0;              // measurements it was fitted to (0: from a specification)
  bool operator==(const ClassFit&) const = default;
};

// A copy of `bytes` takes latency_us + bytes / (gbps · 1e3) µs.
struct LinkFit {
  double latency_us = 0;
  double gbps = 0;  // 1e9 bytes per second
  int samples = 0;
  bool operator==(const LinkFit&) const = default;
};

struct ComputeSample {
  WorkClass work_class = WorkClass::copy;
  std::string layer;  // for the record and per-layer comparisons
  std::int64_t batch = 0;
  double flops = 0;
  int kernels = 0;
  double us = 0;
  bool operator==(const ComputeSample&) const = default;
};

struct CopySample {
  bool to_host = true;  // device → host (offload); false: host → device (prefetch)
  std::size_t bytes = 0;
  double us = 0;
  bool operator==(const CopySample&) const = default;
};

// Whose kernels a profile describes, and so who answers a plan's questions
// for it (engine/device/kernel_queries.h): the cpu device's (oneDNN on the
// machine that plans), or the cuda device's on the profiled GPU
// (GpuQueries over Profile::gpu), which never asks the host.
enum class ProfiledKernels : std::uint8_t { cpu, cuda };

// A 16-bit step's memory-bound work (Work::dtype bf16 or f16: batch norm,
// ReLU, pooling, the residual add) moves half the bytes of its f32 form,
// so it takes half the time of its class's f32 fit; its launches cost the same.
inline constexpr double kHalfBytesSpeedup = 2.0;

struct Profile {
  std::string name;    // "cpu: 2 cores (measured on resnet20)", "NVIDIA Tesla M40 24 GB"
  std::string source;  // "measured" or "specification"
  std::string notes;   // how it was made: the command, or the published figures and assumptions
  std::size_t memory_bytes = 0;  // device memory; 0: as much as the host has (the cpu device)
  ProfiledKernels kernels = ProfiledKernels::cpu;
  GpuKernelFacts gpu;  // kernels == cuda: what the cuda device's kernels answer there
  // A 16-bit step's dense work (convolutions) runs at this multiple of its
  // class's f32 fit: the tensor cores' gain (1: none, as on the M40 and the
  // cpu device). Profiles measured on a device time f32 only, so theirs is
  // 1 until 16-bit timing is measured too (the cuda device's tensor cores
  // then go unmodelled: prefer a specification's figure for them).
  double dense_16bit_speedup = 1;
  std::array<std::optional<ClassFit>, kWorkClassCount> compute;
  LinkFit to_host, to_device;
  // What a measured profile was fitted to, kept so that it can be re-fitted
  // and compared layer by layer.
  std::vector<ComputeSample> compute_samples;
  std::vector<CopySample> copy_samples;

  const std::optional<ClassFit>& fit(WorkClass c) const { return compute[static_cast<std::size_t>(c)]; }
  std::optional<ClassFit>& fit(WorkClass c) { return compute[static_cast<std::size_t>(c)]; }
  bool operator==(const Profile&) const = default;
};

nlohmann::json to_json(const Profile& p);
// Throws std::invalid_argument naming the key for a missing or wrong field,
// an unknown class, or a number out of range (negative, non-finite, a
// slope outside [0, 1], a class or link with no throughput).
Profile profile_from_json(const nlohmann::json& j);

// Files. Loading names the file in every error (missing, not JSON, not a
// profile); saving writes a temporary file and renames it over the target.
Profile load_profile(const std::string& path);
void save_profile(const Profile& p, const std::string& path);

}  // namespace tidepool
