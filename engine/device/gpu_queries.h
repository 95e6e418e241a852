// The cuda device's answers for a GPU that is not here (KernelQueries), so
// that `plan --profile v100` and the sim device place what the cuda device
// would on that GPU, on any host:
//  - max-pool indices and a fused ReLU's mask follow our own kernels'
//    formulas (engine/device/cuda/pooling.cu, batchnorm_sums.cu call the
//    same functions), and activations stay NCHW, cuDNN's own layout;
//  - a convolution's workspace is what `tidepool profile --device cuda`
//    measured for that shape where the profile has it, and otherwise the
//    documented model of cuDNN's choices below (gpu_queries.cpp);
//  - 16-bit types: f16 on every GPU (tensor cores where it has them,
//    cuDNN's pseudo-half configuration, f16 storage with f32 arithmetic,
//    where it has none), bf16 from compute capability 8.0. A GPU without
//    bf16 refuses --precision bf16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/device/kernel_queries.h"

namespace tidepool {

// One convolution pass's workspace as cuDNN reported it on a real GPU.
struct MeasuredWorkspace {
  ConvShape shape;
  ConvScheme scheme = ConvScheme::p;
  ConvPass pass = ConvPass::forward;
  std::size_t bytes = 0;  // cuDNN's workspace, without the 16-bit weight copy
};
bool operator==(const MeasuredWorkspace& a, const MeasuredWorkspace& b);

// What a GPU profile says of the cuda device's kernels on that GPU.
struct GpuKernelFacts {
  std::string gpu;  // "NVIDIA Tesla V100 SXM2 32 GB", for messages
  bool f16 = true;   // computes f16 natively
  bool bf16 = false; // computes bf16 natively (compute capability 8.0 and later)
  std::vector<MeasuredWorkspace> workspaces;
};
// Not defaulted: nvcc compiles the cuda kernels, which see this header, as C++17.
bool operator==(const GpuKernelFacts& a, const GpuKernelFacts& b);

class GpuQueries final : public KernelQueries {
 public:
  explicit GpuQueries(GpuKernelFacts facts) : facts_(std::move(facts)) {}

  bool takes_16bit(DType type) const override;
  std::string refuses_16bit(DType type) const override;
  std::int64_t channel_block() const override { return 0; }
  std::size_t conv_workspace_bytes(const ConvShape&, ConvScheme, ConvPass) const override;
  std::size_t batchnorm_relu_mask_bytes(const BatchNormShape& s) const override;
  std::size_t pool_saved_bytes(const PoolShape& s) const override;

  const GpuKernelFacts& facts() const { return facts_; }

 private:
  GpuKernelFacts facts_;
};

// The `p` scheme never picks an algorithm with more workspace than this
// (the cuda device's rule, engine/device/cuda/conv2d.cpp, and the model's):
// the plan would have to give it that much arena, and no CIFAR or ImageNet
// layer needs more for a fast path.
inline constexpr std::size_t kMaxConvWorkspace = std::size_t{1} << 30;

// The formulas the cuda device's own kernels follow (one definition: the
// cuda backend calls these too).
// Max pooling keeps the argmax's offset in its window per output: a byte
// where the window has at most 256 values, else an int32.
bool gpu_pool_byte_indices(const PoolShape& s);
std::size_t gpu_pool_saved_bytes(const PoolShape& s);
// A fused ReLU's mask: a bit a value, in 32-bit words.
std::size_t gpu_relu_mask_bytes(const BatchNormShape& s);
// The message for --precision bf16 on a GPU without bf16 arithmetic.
std::string gpu_refuses_bf16(const std::string& gpu);

// The model of cuDNN's workspace for a pass without the 16-bit weight copy
// (gpu_queries.cpp says what it assumes and where each figure comes from).
// The same for every pass: each transforms one operand per side and the filter.
std::size_t modelled_cudnn_workspace(const ConvShape& s, ConvScheme scheme);

}  // namespace tidepool
