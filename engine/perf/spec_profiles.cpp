#include "engine/perf/spec_profiles.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace tidepool {

namespace {

// Assumptions that turn a data sheet into throughput curves. They are
// stated in every derived profile's notes.
//  - Dense convolutions and GEMMs reach a share of their peak at
//    saturation (GpuSpec::dense_efficiency): of the FP32 peak in f32, of
//    the f16 tensor-core peak in 16 bits (the same share: we assume tensor
//    cores are kept as busy as the FMA units; without tensor cores cuDNN's
//    pseudo-half configuration computes at the f32 rate). Memory-bound
//    layers reach a share of the bandwidth (bandwidth_efficiency). These
//    two are what no data sheet gives, and they are calibrated so that the
//    sim trains ResNet-50 at the published single-GPU rates
//    (GpuSpec::reference; bench/calibrate_gpu_profiles.py): on the V100
//    both from its f32 and mixed-precision figures; elsewhere, with one
//    figure, the V100's bandwidth share and the dense share from it.
//  - Saturation: a kernel needs about 1 ms of work at peak to fill the GPU
//    (AccUDNN Fig. 6: on the M40 AlexNet's conv and FC throughput keeps
//    growing up to minibatches of a few hundred); below it the throughput
//    falls as (flops / saturation)^0.5.
//  - Memory-bound classes run at the calibrated share of the memory
//    bandwidth (GpuSpec::bandwidth_efficiency), moving the
//    bytes per counted FLOP listed in kBytesPerFlop (a FLOP is one element
//    written for them: engine/perf/work.h), and saturate at 20 µs of work.
//  - Every kernel launch costs 5 µs (launch plus cuDNN's own set-up).
constexpr double kComputeSaturationUs = 1000;
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
  p.kernels = ProfiledKernels::cuda;
  p.gpu = {g.name, true, g.bf16, {}};
  const double dense = g.fp32_tflops * 1e3 * g.dense_efficiency;  // GFLOP/s
  p.dense_16bit_speedup = g.f16_tensor_tflops > 0 ? g.f16_tensor_tflops / g.fp32_tflops : 1.0;
  for (WorkClass c : {WorkClass::conv_forward, WorkClass::conv_backward, WorkClass::linear_forward,
                      WorkClass::linear_backward})
    p.fit(c) = curve(dense, kComputeSaturationUs);
  const double bandwidth = g.memory_gbps * g.bandwidth_efficiency;  // GB/s
  for (WorkClass c : {WorkClass::depthwise_forward, WorkClass::depthwise_backward})
    p.fit(c) = curve(bandwidth * kDepthwiseFlopsPerByte, kMemorySaturationUs);
  for (const MemoryBound& m : kBytesPerFlop) p.fit(m.work_class) = curve(bandwidth / m.bytes_per_flop, kMemorySaturationUs);
  p.to_host = p.to_device = {g.link_latency_us, g.link_gbps, 0};
  std::ostringstream notes;
  notes << "Derived from the published specification, not measured: " << g.fp32_tflops << " TFLOP/s FP32, ";
  if (g.f16_tensor_tflops > 0)
    notes << g.f16_tensor_tflops << " TFLOP/s f16 on tensor cores" << (g.bf16 ? " (bf16 too)" : " (no bf16)") << ", ";
  else
    notes << "no tensor cores (f16 through cuDNN's pseudo-half configuration at the f32 rate; no bf16), ";
  notes << g.memory_gbps << " GB/s memory bandwidth, " << g.memory_gib << " GiB, host link " << g.link << " at "
        << g.link_gbps << " GB/s and " << g.link_latency_us << " us per copy. Calibrated on published ResNet-50 "
        << "training throughput (" << g.reference.source << "): dense conv/linear at " << g.dense_efficiency * 100
        << " % of the peak (FP32" << (g.f16_tensor_tflops > 0 ? ", and of the tensor peak in 16 bits" : "")
        << "), memory-bound layers at " << g.bandwidth_efficiency * 100
        << " % of the bandwidth. Assumed: dense work saturating at " << kComputeSaturationUs
        << " us of work; memory-bound layers saturating at "
        << kMemorySaturationUs << " us; below saturation throughput ~ (flops/saturation)^" << kSlope << "; "
        << kLaunchUs << " us per kernel launch; 16-bit memory-bound layers at twice their f32 speed (half the bytes); "
        << "convolution workspaces from the model of cuDNN's choices in engine/device/gpu_queries.cpp "
        << "(engine/perf/spec_profiles.cpp).";
  p.notes = notes.str();
  return p;
}

}  // namespace

const std::vector<GpuSpec>& gpu_specs() {
  // Data sheets: Tesla M40 24 GB (GM200: 7 TFLOP/s, 288 GB/s, no tensor
  // cores); V100 SXM2 32 GB (15.7 TFLOP/s FP32, 125 f16 tensor, 900 GB/s);
  // A100 SXM4 80 GB (19.5 FP32, 312 f16/bf16 tensor dense, 2039 GB/s);
  // H100 SXM5 80 GB (67 FP32, 989 f16/bf16 tensor dense, 3350 GB/s).
  // Host links at what pinned copies achieve: PCIe 3.0 x16 about 12 GB/s
  // of its 15.75; PCIe 4.0 x16 about 25 of its 31.5; PCIe 5.0 x16 about
  // 50 of its 63. References: docs/gpu-profiles.md quotes each row. The
  // last two figures of each row are the calibrated shares
  // (bench/calibrate_gpu_profiles.py, 2026-11-26).
  static const std::vector<GpuSpec> specs = {
      {"m40", "NVIDIA Tesla M40 24 GB", 7.0, 0, false, 288, 24, 12, 10, "PCIe 3.0 x16", 0.495, 0.949,
       {100, 0,
        "no M40 figure is published; the same GM200 chip as the Maxwell GTX Titan X: 159.62 ms per forward and "
        "backward of 16 images (Torch, cuDNN 5.1; jcjohnson/cnn-benchmarks), 100 images/s; no tensor cores, no "
        "published mixed-precision figure"}},
      {"v100", "NVIDIA Tesla V100 SXM2 32 GB", 15.7, 125, false, 900, 32, 12, 10, "PCIe 3.0 x16", 0.862, 0.949,
       {356, 1156,
        "NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5, DGX-1 32GB, 1 GPU: 356 images/s FP32, 1156 AMP "
        "(PyTorch 21.03)"}},
      {"a100", "NVIDIA A100 SXM4 80 GB", 19.5, 312, true, 2039, 80, 25, 5, "PCIe 4.0 x16", 0.881, 0.949,
       {0, 2470,
        "NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5, DGX A100 80GB, 1 GPU: 2470 images/s AMP (PyTorch "
        "21.03); its 938 images/s are TF32, which the cuda device does not use for f32 (it computes f32 exactly), "
        "so no f32 figure is like for like"}},
      {"h100", "NVIDIA H100 SXM5 80 GB", 67.0, 989, true, 3350, 80, 50, 5, "PCIe 5.0 x16", 0.161, 0.949,
       {0, 2616,
        "Lambda deeplearning-benchmark, PyTorch ResNet-50, H100 80GB SXM5, 1 GPU: 2616 images/s fp16 (PyTorch NGC "
        "22.09); its 1753 images/s \"fp32\" are TF32 convolutions (PyTorch's default on Ampere and later), not "
        "like for like with the cuda device's exact f32"}},
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
