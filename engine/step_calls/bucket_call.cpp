#include "engine/step_calls/bucket_call.h"

namespace tidepool {

BucketCall bucket_call(const Schedule& s, int bucket, const TensorAddress& address) {
  const GradientBucket& b = s.buckets[static_cast<std::size_t>(bucket)];
  BucketCall call;
  call.bucket = reinterpret_cast<float*>(address(b.tensor));
  for (int g : b.grads)
    call.grads.emplace_back(reinterpret_cast<float*>(address(g)), s.tensors[static_cast<std::size_t>(g)].info.shape.numel());
  call.average = 1.0f / static_cast<float>(s.settings.memory.ranks);
  return call;
}

void pack(Kernels& k, const BucketCall& call) {
  float* at = call.bucket;
  for (auto [g, n] : call.grads) {
    k.copy(n, g, at);
    at += n;
  }
}

void unpack(Kernels& k, const BucketCall& call) {
  const float* at = call.bucket;
  for (auto [g, n] : call.grads) {
    k.convert(n, DType::f32, at, DType::f32, g, call.average);
    at += n;
  }
}

}  // namespace tidepool
