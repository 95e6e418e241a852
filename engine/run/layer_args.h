// The arguments a schedule's compute step calls its layer with, and the
// parameters the optimiser step updates: one definition for the executor,
// which passes device addresses, and for the performance model
// (engine/perf/step_work.h), which passes none and counts the kernels.
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

// LayerArgs for `node`'s forward or backward pass in schedule `s`; the
// seed is the caller's to set.
LayerArgs layer_args(const Schedule& s, int node, bool forward, const TensorAddress& address);

// The trainable parameters, with their gradients and momenta, in schedule
// order: what one update step passes to sgd_update.
struct TrainableParam {
  std::int64_t count = 0;
  int weight = -1, gradient = -1, momentum = -1;  // tensor ids
};
std::vector<TrainableParam> trainable_params(const Schedule& s);

}  // namespace tidepool
