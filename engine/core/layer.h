// A layer is a pure description: it checks its input shapes, names its
// parameters, says which tensors its backward pass reads (so the planner
// knows what must stay resident or come back from the host), and turns
// pointers into kernel calls. It holds no tensors and no device state, so one
// network serves every batch size, device and plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/conv_scheme.h"
#include "engine/core/tensor.h"

namespace tidepool {

class Kernels;        // engine/device/kernels.h: what a layer's calls run on
class KernelQueries;  // engine/device/kernel_queries.h: what a layer's sizes may ask

enum class ParamInit : std::uint8_t {
  kaiming_normal_fan_out,  // N(0, 2 / fan_out): torchvision's init for conv in ReLU nets
  uniform_fan_in,          // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for linear
  zeros,
  ones,
};

struct ParamSpec {
  std::string suffix;  // "weight", "bias", "running_mean", ...
  Shape shape;
  ParamInit init = ParamInit::zeros;
  std::int64_t fan_in = 1, fan_out = 1;
  // Trainable parameters get a gradient and momentum and count as model
  // parameters; the rest (batchnorm running statistics) are state.
  bool trainable = true;
};

// Tensors a forward pass leaves for its own backward pass besides its
// inputs and output (batchnorm's batch statistics, max-pool indices, ...).
struct SavedSpec {
  std::string suffix;
  std::size_t bytes = 0;
};

// Data-parallel batch norm over the global batch (--sync-bn): a pass that
// needs sums over every rank's part of the batch runs in two parts, and the
// executor all-reduces the sums between them (engine/run/executor.cpp).
enum class PassPart : std::uint8_t {
  whole,  // the pass on this rank's batch alone (one rank, eval, or no --sync-bn)
  sums,   // this rank's sums into LayerArgs::rank_sums, and what needs only them
  rest,   // the rest of the pass, rank_sums now summed over the ranks
};

// Everything a layer's kernels need for one call. Pointers point into device
// memory. In forward, grads are null; in backward, input_grads[i] is null
// when input i needs no gradient (images, labels).
struct LayerArgs {
  std::vector<Shape> input_shapes;
  Shape output_shape;
  // The activations (inputs, output and their gradients) hold `dtype`:
  // f32 (f32 tensors, or the step's f32 copies of 16-bit ones:
  // engine/step_calls/f32_views.h), or bf16/f16 where the step computes in 16
  // bits itself (NodeTensors::computes_16bit).
  // Labels are i32 whatever it says.
  DType dtype = DType::f32;
  std::vector<const void*> inputs;
  void* output = nullptr;
  std::vector<float*> params;       // in params() order
  std::vector<float*> param_grads;  // in params() order; null for non-trainable
  std::vector<void*> saved;         // in saved() order
  void* workspace = nullptr;
  const void* output_grad = nullptr;
  std::vector<void*> input_grads;
  ConvScheme scheme = ConvScheme::p;
  // The schedule's activation layout (kernels.h channel_blocked): the
  // layers put it in their kernels' shapes.
  std::int64_t channel_block = 0;
  bool training = true;
  // The forward pass again, for a backward pass that reads its output
  // (StepKind::recompute): the same kernels on the same inputs write the
  // same bits, and nothing else changes (batch norm leaves its running
  // statistics as the first pass left them).
  bool recompute = false;
  std::uint64_t seed = 0;  // fresh per layer and iteration (dropout)
  PassPart part = PassPart::whole;
  // sums and rest: Layer::rank_sums() doubles in the step's workspace.
  double* rank_sums = nullptr;
};

enum class Pass : std::uint8_t { forward, backward };

// An activation pointer of a call whose dtype is f32 (LayerArgs::dtype).
inline const float* as_f32(const void* p) { return static_cast<const float*>(p); }
inline float* as_f32(void* p) { return static_cast<float*>(p); }

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;

  const std::string& name() const { return name_; }
  virtual std::string_view kind() const = 0;

  // Checks the inputs and returns the output shape; throws
  // std::invalid_argument naming the layer when they do not fit.
  virtual Shape infer(const std::vector<Shape>& inputs) const = 0;
  virtual DType output_dtype() const { return DType::f32; }
  // Input i is an index (labels), not a value with a gradient.
  virtual bool input_is_index(int i) const { return false; }

  virtual std::vector<ParamSpec> params(const std::vector<Shape>& inputs) const { return {}; }
  // `channel_block`: the activation layout the calls will pass
  // (LayerArgs::channel_block), which the sizes may depend on.
  virtual std::vector<SavedSpec> saved(const std::vector<Shape>& inputs, std::int64_t channel_block,
                                       const KernelQueries&) const {
    return {};
  }
  // `dtype`: the activations' type the calls will pass (LayerArgs::dtype).
  virtual std::size_t workspace_bytes(const std::vector<Shape>& inputs, Pass, ConvScheme,
                                      std::int64_t channel_block, DType dtype, const KernelQueries&) const {
    return 0;
  }

  // Its kernels are among those that have 16-bit forms (KernelQueries::takes_16bit
  // lists them), so on a table that takes the precision's type a 16-bit
  // step of it can pass its tensors as they are (LayerArgs::dtype) instead
  // of f32 copies. The planner decides per step (engine/plan/planner.cpp).
  virtual bool has_16bit_kernels() const { return false; }

  // The same layer with a ReLU fused onto its output, for --fuse relu
  // (engine/core/fusion.h): same name, parameters and saved batch
  // statistics, output max(output, 0). Null for a layer that has no such
  // form (or has one fused already).
  virtual std::unique_ptr<Layer> with_relu() const { return nullptr; }

  // How many doubles the pass sums over the ranks when it runs in parts
  // (PassPart; --sync-bn); 0 for a layer whose every sample is its own.
  virtual std::size_t rank_sums(const std::vector<Shape>& inputs, Pass) const { return 0; }

  // What backward reads. The planner keeps these alive until this layer's
  // backward pass has run.
  virtual bool backward_reads_input(int i) const = 0;
  virtual bool backward_reads_output() const = 0;

  virtual void forward(Kernels&, const LayerArgs&) const = 0;
  virtual void backward(Kernels&, const LayerArgs&) const = 0;

  // For the benchmark and the models table.
  virtual double forward_flops(const std::vector<Shape>& inputs) const { return 0; }

 protected:
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string name_;
};

}  // namespace tidepool
