#include "engine/perf/work.h"

namespace tidepool {

namespace {
bool depthwise(const ConvShape& s) { return s.groups > 1 && s.groups == s.c && s.groups == s.k; }
double conv_bias_flops(const ConvShape& s) {
  return s.bias ? static_cast<double>(s.n) * s.k * s.out_h() * s.out_w() : 0.0;
}
double elements(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return static_cast<double>(n) * c * h * w;
}
}  // namespace

void WorkCounter::conv_forward(const ConvShape& s, ConvScheme, const void*, const float*, const float*, void*,
                               void*) {
  add(depthwise(s) ? WorkClass::depthwise_forward : WorkClass::conv_forward, s.flops() + conv_bias_flops(s), s.dtype);
}

void WorkCounter::conv_backward_data(const ConvShape& s, ConvScheme, const void*, const float*, void*, void*) {
  add(depthwise(s) ? WorkClass::depthwise_backward : WorkClass::conv_backward, s.flops(), s.dtype);
}

void WorkCounter::conv_backward_weights(const ConvShape& s, ConvScheme, const void*, const void*, float*, float*,
                                        void*) {
  add(depthwise(s) ? WorkClass::depthwise_backward : WorkClass::conv_backward, s.flops() + conv_bias_flops(s), s.dtype);
}

void WorkCounter::batchnorm_forward_train(const BatchNormShape& s, const void*, const float*, const float*, void*,
                                          float*, float*, float*, float*, void*) {
  add(WorkClass::batchnorm_forward, elements(s.n, s.c, s.h, s.w), s.dtype);
}

void WorkCounter::batchnorm_forward_infer(const BatchNormShape& s, const void*, const float*, const float*,
                                          const float*, const float*, void*) {
  add(WorkClass::batchnorm_forward, elements(s.n, s.c, s.h, s.w), s.dtype);
}

void WorkCounter::batchnorm_backward(const BatchNormShape& s, const void*, const void*, const float*, const float*,
                                     const float*, void*, float*, float*, const void*) {
  add(WorkClass::batchnorm_backward, elements(s.n, s.c, s.h, s.w), s.dtype);
}

void WorkCounter::batchnorm_sums(const BatchNormShape& s, const float*, double*) {
  add(WorkClass::batchnorm_forward, elements(s.n, s.c, s.h, s.w) / 2);
}

void WorkCounter::batchnorm_forward_with_sums(const BatchNormShape& s, const float*, const float*, const float*,
                                              const double*, float*, float*, float*, float*, float*) {
  add(WorkClass::batchnorm_forward, elements(s.n, s.c, s.h, s.w) / 2);
}

void WorkCounter::batchnorm_backward_sums(const BatchNormShape& s, const float*, const float*, const float*,
                                          const float*, double*, float*, float*) {
  add(WorkClass::batchnorm_backward, elements(s.n, s.c, s.h, s.w) / 2);
}

void WorkCounter::batchnorm_backward_with_sums(const BatchNormShape& s, const float*, const float*, const float*,
                                               const float*, const float*, const double*, float*) {
  add(WorkClass::batchnorm_backward, elements(s.n, s.c, s.h, s.w) / 2);
}

void WorkCounter::pool_forward(const PoolShape& s, const void*, void*, void*) {
  add(WorkClass::pool_forward, elements(s.n, s.c, s.out_h(), s.out_w()) * static_cast<double>(s.kh * s.kw), s.dtype);
}

void WorkCounter::pool_backward(const PoolShape& s, const void*, const void*, const void*, void*) {
  add(WorkClass::pool_backward, elements(s.n, s.c, s.h, s.w), s.dtype);
}

void WorkCounter::linear_forward(const LinearShape& s, const float*, const float*, const float*, float*) {
  add(WorkClass::linear_forward, 2.0 * static_cast<double>(s.n) * s.in * s.out);
}

void WorkCounter::linear_backward_data(const LinearShape& s, const float*, const float*, float*) {
  add(WorkClass::linear_backward, 2.0 * static_cast<double>(s.n) * s.in * s.out);
}

void WorkCounter::linear_backward_weights(const LinearShape& s, const float*, const float*, float*, float*) {
  add(WorkClass::linear_backward, 2.0 * static_cast<double>(s.n) * s.in * s.out);
}

}  // namespace tidepool
