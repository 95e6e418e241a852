// Profiles derived from GPUs' published specifications, for the sim device
// and the AccUDNN tables where no such GPU is at hand: the M40 of the
// AccUDNN paper, a V100 and an H100. Each is marked "specification" and its
// notes list the published figures and the assumptions that turn them into
// throughput curves (spec_profiles.cpp explains each). profiles/*.json are
// these, written by `tidepool profile --spec NAME -o FILE`; a test checks
// that the files and the code agree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/perf/profile.h"

namespace tidepool {

struct GpuSpec {
  std::string key;   // "m40"
  std::string name;  // "NVIDIA Tesla M40 24 GB"
  double fp32_tflops = 0;        // peak, without tensor cores
  double memory_gbps = 0;        // device memory bandwidth
  double memory_gib = 0;
  double link_gbps = 0;          // host link, achievable with pinned memory
  double link_latency_us = 0;
  std::string link;              // "PCIe 3.0 x16"
};

const std::vector<GpuSpec>& gpu_specs();
// "m40, v100, h100"
std::string gpu_spec_names();
std::optional<Profile> specification_profile(std::string_view key);

// A profile by name or path: a GPU spec's key, or a profile JSON file.
// Throws std::runtime_error naming the file, or listing the spec names
// when the argument is neither.
Profile resolve_profile(const std::string& name_or_path);

}  // namespace tidepool
