// The call a schedule's compute step makes, and the calls its optimiser
// step makes: one definition for the executor, which passes device
// addresses, and for the performance model (engine/perf/step_work.h),
// which passes none and counts the kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/layer.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

// `address(tensor)`: where the tensor is (null when it is not placed).
using TensorAddress = std::function<std::byte*(int tensor)>;

// A 16-bit tensor and the f32 copy a step works on (engine/step_calls/f32_views.h).
struct F32Copy {
  std::int64_t count = 0;
  DType type = DType::bf16;
  std::byte* stored = nullptr;  // the tensor
  std::byte* copy = nullptr;    // its f32 copy, in the step's workspace
  bool widen = false;           // before the layer runs
  bool round = false;           // after
  float scale = 1.0f;           // rounded as copy * scale (fp16's loss scale: scale_loss_gradient)
};

struct LayerCall {
  const Layer* layer = nullptr;
  bool forward = true;
  LayerArgs args;  // f32 copies in place of the 16-bit tensors
  std::vector<F32Copy> copies;
  // --sync-bn (NodeTensors::forward_rank_sums): the doubles at
  // args.rank_sums the pass sums over the ranks between its parts; 0: it
  // runs whole.
  std::size_t rank_sums = 0;
};

// `node`'s forward or backward call in schedule `s`; the seed is the
// caller's to set.
LayerCall layer_call(const Schedule& s, const Layer& layer, int node, bool forward, const TensorAddress& address);

// fp16's loss scaling (engine/run/loss_scaler.h): the loss node's
// backward call rounds the gradient it starts backward with (d loss /
// d logits) multiplied by `scale`. Throws std::logic_error when the call
// rounds no 16-bit input gradient (the scale would be lost).
void scale_loss_gradient(LayerCall& call, float scale);

// Widens the 16-bit tensors the layer reads, runs it, rounds what it wrote.
// A call with rank sums runs as args.part says: PassPart::sums (widening
// first) and, once the sums are all-reduced, PassPart::rest (rounding
// after).
void run(Kernels& k, const LayerCall& call);

struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
};

// The optimiser step: SGD over the trainable parameters in schedule order.
// With fp16's loss scaling (Schedule::overflow), the overflow flag is
// cleared, every gradient divided by the scale and checked, and then every
// update skipped when one was not finite.
struct UpdateCall {
  struct Param {
    std::int64_t count = 0;
    float *w = nullptr, *dw = nullptr, *v = nullptr;
  };
  std::vector<Param> params;
  SgdOptions sgd;
  float* overflow = nullptr;  // fp16: the flag; null: no loss scaling
  float inv_scale = 1.0f;     // 1 / the loss scale
};
UpdateCall update_call(const Schedule& s, const SgdOptions& sgd, float loss_scale, const TensorAddress& address);
void run(Kernels& k, const UpdateCall& call);

}  // namespace tidepool
