#include "engine/perf/spec_profiles.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace tidepool {

namespace {

// Assumptions that turn a data sheet into throughput curves. They are
// stated in every derived profile's notes.
//  - Dense convolutions and GEMMs reach 70 % of the FP32 peak at
//    saturation (cuDNN's implicit-GEMM and Winograd kernels without tensor
//    cores typically reach 60-80 %).
//  - Saturation: a kernel needs about 1 ms of work at peak to fill the GPU
//    (AccUDNN Fig. 6: on the M40 AlexNet's conv and FC throughput keeps
//    growing up to minibatches of a few hundred); below it the throughput
//    falls as (flops / saturation)^0.5.
//  - Memory-bound classes run at 80 % of the memory bandwidth, moving the
//    bytes per counted FLOP listed in kBytesPerFlop (a FLOP is one element
//    written for them: engine/perf/work.h), and saturate at 20 µs of work.
//  - Every kernel launch costs 5 µs (launch plus cuDNN's own set-up).
constexpr double kComputeEfficiency = 0.7;
constexpr double kComputeSaturationUs = 1000;
constexpr double kBandwidthEfficiency = 0.8;
constexpr double kMemorySaturationUs = 20;
constexpr double kSlope = 0.5;
constexpr double kLaunchUs = 5;

struct MemoryBound {
  WorkClass work_class;
  double bytes_per_flop;  // bytes moved per counted FLOP
};
// relu forward reads x, writes y (8 B per element); backward reads y, dy,
// writes dx (12). Batch norm forward reads x twice (statistics, then
// normalisation) and writes y (12); backward reads x and dy twice and
// writes dx (20). A max pool's counted FLOPs are its window reads (4 B
// each, the output write is a quarter of that again for 2×2); its backward
// counts input elements (dy, saved indices, dx: 12). Dropout writes y and
// its mask (12). Softmax-xent reads logits, writes probabilities (8). SGD
// reads w, dw, v and writes w, v (20).
constexpr MemoryBound kBytesPerFlop[] = {
    {WorkClass::batchnorm_forward, 12},  {WorkClass::batchnorm_backward, 20}, {WorkClass::relu_forward, 8},
    {WorkClass::relu_backward, 12},      {WorkClass::pool_forward, 5},        {WorkClass::pool_backward, 12},
    {WorkClass::dropout_forward, 12},    {WorkClass::dropout_backward, 12},   {WorkClass::add, 12},
    {WorkClass::copy, 8},                {WorkClass::accumulate, 12},         {WorkClass::softmax_forward, 8},
    {WorkClass::softmax_backward, 12},   {WorkClass::update, 20},
};

// A depthwise 3×3 convolution does 18 FLOPs per output element and moves
// about 8 bytes for it (input and output once each): memory-bound at
// 2.25 FLOP/byte.
constexpr double kDepthwiseFlopsPerByte = 2.25;

ClassFit curve(double gflops, double saturation_us) {
  return {gflops, gflops * 1e3 * saturation_us, kSlope, kLaunchUs, 0};
}

Profile derive(const GpuSpec& g) {
  Profile p;
  p.name = g.name;
  p.source = "specification";
  p.memory_bytes = static_cast<std::size_t>(g.memory_gib * double(1ull << 30));
  const double dense = g.fp32_tflops * 1e3 * kComputeEfficiency;  // GFLOP/s
  for (WorkClass c : {WorkClass::conv_forward, WorkClass::conv_backward, WorkClass::linear_forward,
                      WorkClass::linear_backward})
    p.fit(c) = curve(dense, kComputeSaturationUs);
  const double bandwidth = g.memory_gbps * kBandwidthEfficiency;  // GB/s
  for (WorkClass c : {WorkClass::depthwise_forward, WorkClass::depthwise_backward})
    p.fit(c) = curve(bandwidth * kDepthwiseFlopsPerByte, kMemorySaturationUs);
  for (const MemoryBound& m : kBytesPerFlop) p.fit(m.work_class) = curve(bandwidth / m.bytes_per_flop, kMemorySaturationUs);
  p.to_host = p.to_device = {g.link_latency_us, g.link_gbps, 0};
  std::ostringstream notes;
  notes << "Derived from the published specification, not measured: " << g.fp32_tflops << " TFLOP/s FP32, "
        << g.memory_gbps << " GB/s memory bandwidth, " << g.memory_gib << " GiB, host link " << g.link << " at "
        << g.link_gbps << " GB/s and " << g.link_latency_us << " us per copy. Assumed: dense conv/linear at "
        << kComputeEfficiency * 100 << " % of peak, saturating at " << kComputeSaturationUs
        << " us of work; memory-bound layers at " << kBandwidthEfficiency * 100 << " % of the bandwidth, saturating at "
        << kMemorySaturationUs << " us; below saturation throughput ~ (flops/saturation)^" << kSlope << "; "
        << kLaunchUs << " us per kernel launch (engine/perf/spec_profiles.cpp).";
  p.notes = notes.str();
  return p;
}

}  // namespace

const std::vector<GpuSpec>& gpu_specs() {
  // Data sheets: Tesla M40 24 GB (GM200: 7 TFLOP/s, 288 GB/s); V100 PCIe
  // 32 GB (14 TFLOP/s, 900 GB/s); H100 SXM5 80 GB (67 TFLOP/s FP32, 3.35
  // TB/s). Host links at what pinned copies achieve: PCIe 3.0 x16 about 12
  // GB/s of its 15.75; PCIe 5.0 x16 about 50 of its 63.
  static const std::vector<GpuSpec> specs = {
      {"m40", "NVIDIA Tesla M40 24 GB", 7.0, 288, 24, 12, 10, "PCIe 3.0 x16"},
      {"v100", "NVIDIA Tesla V100 PCIe 32 GB", 14.0, 900, 32, 12, 10, "PCIe 3.0 x16"},
      {"h100", "NVIDIA H100 SXM5 80 GB", 67.0, 3350, 80, 50, 5, "PCIe 5.0 x16"},
  };
  return specs;
}

std::string gpu_spec_names() {
  std::string names;
  for (const GpuSpec& g : gpu_specs()) names += (names.empty() ? "" : ", ") + g.key;
  return names;
}

std::optional<Profile> specification_profile(std::string_view key) {
  for (const GpuSpec& g : gpu_specs())
    if (g.key == key) return derive(g);
  return std::nullopt;
}

Profile resolve_profile(const std::string& name_or_path) {
  if (auto p = specification_profile(name_or_path)) return *p;
  if (!std::filesystem::exists(name_or_path))
    throw std::runtime_error("profile '" + name_or_path + "' is neither a file nor a GPU specification (" +
                             gpu_spec_names() + ")");
  return load_profile(name_or_path);
}

}  // namespace tidepool
