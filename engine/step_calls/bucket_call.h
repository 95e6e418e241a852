// The compute-stream calls around a gradient bucket's all-reduce
// (Schedule::buckets): packing the parameter gradients into the bucket
// right behind the backward step that completed them, and unpacking the
// summed bucket into the gradients as their average before the update. One
// definition for the executor, which passes device addresses, and for the
// performance model (engine/perf/step_work.h), which passes none and counts
// the kernels, as layer_args.h is for layers and the update.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/device/kernels.h"
#include "engine/step_calls/layer_args.h"

namespace tidepool {

struct BucketCall {
  float* bucket = nullptr;
  std::vector<std::pair<float*, std::int64_t>> grads;  // in the bucket's order, with their counts
  float average = 1.0f;                                 // 1 / the ranks
};
BucketCall bucket_call(const Schedule& s, int bucket, const TensorAddress& address);

// The gradients, one after the other, into the bucket.
void pack(Kernels& k, const BucketCall& call);
// The bucket's sums times `average` back into the gradients.
void unpack(Kernels& k, const BucketCall& call);

}  // namespace tidepool
