// Where a step's 16-bit tensors are widened to f32 (--precision bf16|fp16).
//
// Activations and their gradients are stored in 16 bits, but many kernels
// compute in f32: all of the cpu device's in f16 and, without AVX-512 BF16,
// in bf16 (oneDNN 2.6 has no f16 training kernels on x86, and without the
// BF16 instructions only reference or emulated bf16 ones), its dropout,
// flatten, classifier and loss always, and the cuda device's dropout,
// classifier and loss. So such a
// step works on f32 copies (a step whose kernels take 16 bits has none:
// NodeTensors::computes_16bit): the 16-bit tensors it reads are widened into
// them before it runs, and what it writes is rounded back to 16 bits after.
// The product of two 16-bit values is exact in f32, so this is 16-bit
// training with f32 accumulation, as on hardware with 16-bit units, up to
// the order of the sums.
//
// The copies live at the front of the step's workspace, which the planner
// sizes with this function and the executor carves with it, so every byte
// is in the plan:
//
//   [view 0][view 1]...[rank sums][the layer's own workspace]
//
// (the rank sums only with --sync-bn on more than one rank:
// NodeTensors::forward_rank_sums, engine/schedule/schedule.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/layer.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

struct F32View {
  enum class Arg : std::uint8_t { input, output, output_grad, input_grad };
  Arg arg = Arg::input;
  int index = 0;       // which input, for input and input_grad
  int tensor = -1;     // the 16-bit tensor
  std::size_t offset = 0;  // of the f32 copy in the workspace
  bool widen = false;      // copied in before the step (what it reads)
  bool round = false;      // copied out after the step (what it writes)
};

struct F32Views {
  std::vector<F32View> views;
  std::size_t bytes = 0;  // the copies', before the layer's own workspace
};

// The views of `node`'s forward or backward step in `s` (none in fp32, and
// none where the step computes in 16 bits: NodeTensors::computes_16bit).
// Backward needs the node's gradient tensors to exist: the planner calls
// it once it has made them.
F32Views f32_views(const Schedule& s, const Layer& layer, int node, bool forward);

}  // namespace tidepool
