// Profiles derived from GPUs' published specifications, for the sim device
// and the AccUDNN tables where no such GPU is at hand: the M40 of the
// AccUDNN paper, a V100, an A100 and an H100. Each is marked
// "specification" and its notes list the published figures and the
// assumptions that turn them into throughput curves (spec_profiles.cpp
// explains each). Each carries the cuda device's answers on that GPU
// (engine/device/gpu_queries.h), so its plans never ask the host.
// Two efficiencies per GPU are calibrated against published single-GPU
// ResNet-50 training throughput (bench/calibrate_gpu_profiles.py finds them) (GpuSpec::reference, docs/gpu-profiles.md
// has the table and tests/engine/perf/spec_calibration_test.cpp holds the
// sim to it). profiles/*.json are these, written by
// `tidepool profile --spec NAME -o FILE`; a test checks that the files
// and the code agree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/perf/profile.h"

namespace tidepool {

// Published single-GPU ResNet-50 training throughput a profile is held to.
struct PublishedThroughput {
  double fp32_images_per_s = 0;   // 0: none published that is like for like
  double mixed_images_per_s = 0;  // fp16 with f32 master weights (AMP); 0: none
  std::string source;             // where the figures come from, and what else they say
};

struct GpuSpec {
  std::string key;   // "m40"
  std::string name;  // "NVIDIA Tesla M40 24 GB"
  double fp32_tflops = 0;        // peak, without tensor cores
  double f16_tensor_tflops = 0;  // dense peak of the tensor cores in f16; 0: no tensor cores
  bool bf16 = false;             // bf16 arithmetic (compute capability 8.0 and later)
  double memory_gbps = 0;        // device memory bandwidth
  double memory_gib = 0;
  double link_gbps = 0;          // host link, achievable with pinned memory
  double link_latency_us = 0;
  std::string link;              // "PCIe 3.0 x16"
  // Calibrated (spec_profiles.cpp): the share of its peak that dense work
  // reaches (the FP32 peak in f32, the tensor cores' in 16 bits), and the
  // share of the memory bandwidth that memory-bound layers reach.
  double dense_efficiency = 0;
  double bandwidth_efficiency = 0;
  PublishedThroughput reference;
};

const std::vector<GpuSpec>& gpu_specs();
// "m40, v100, a100, h100"
std::string gpu_spec_names();
std::optional<Profile> specification_profile(std::string_view key);

// A profile by name or path: a GPU spec's key, or a profile JSON file.
// Throws std::runtime_error naming the file, or listing the spec names
// when the argument is neither.
Profile resolve_profile(const std::string& name_or_path);

}  // namespace tidepool
