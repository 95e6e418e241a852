// The call a schedule's compute step makes, and the parameters the
// optimiser step updates: one definition for the executor, which passes
// device addresses, and for the performance model (engine/perf/step_work.h),
// which passes none and counts the kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/layer.h"
#include "engine/plan/schedule.h"

namespace tidepool {

// `address(tensor)`: where the tensor is (null when it is not placed).
using TensorAddress = std::function<std::byte*(int tensor)>;

// A 16-bit tensor and the f32 copy a step works on (engine/plan/f32_views.h).
struct F32Copy {
  std::int64_t count = 0;
  DType type = DType::bf16;
  std::byte* stored = nullptr;  // the tensor
  std::byte* copy = nullptr;    // its f32 copy, in the step's workspace
  bool widen = false;           // before the layer runs
  bool round = false;           // after
  bool loss_scaled = false;     // the loss's gradient: fp16 scales it as it rounds
};

struct LayerCall {
  const Layer* layer = nullptr;
  bool forward = true;
  LayerArgs args;  // f32 copies in place of the 16-bit tensors
  std::vector<F32Copy> copies;
};

// `node`'s forward or backward call in schedule `s`; the seed is the
// caller's to set.
LayerCall layer_call(const Schedule& s, const Layer& layer, int node, bool forward, const TensorAddress& address);

// Widens the 16-bit tensors the layer reads, runs it, rounds what it wrote.
// `loss_scale` multiplies the loss's gradient as it is rounded (1 but in fp16).
void run(Kernels& k, const LayerCall& call, float loss_scale);

// The trainable parameters, with their gradients and momenta, in schedule
// order: what one update step passes to sgd_update.
struct TrainableParam {
  std::int64_t count = 0;
  int weight = -1, gradient = -1, momentum = -1;  // tensor ids
};
std::vector<TrainableParam> trainable_params(const Schedule& s);

}  // namespace tidepool
