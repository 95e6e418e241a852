#include "engine/perf/perf_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tidepool {

namespace {

// Where a class without a fit of its own borrows one: the closest in how it
// uses the hardware (compute-bound classes from conv, memory-bound ones
// from relu), its other pass first.
std::vector<WorkClass> relatives(WorkClass c) {
  using W = WorkClass;
  switch (c) {
    case W::conv_forward: return {W::conv_backward, W::linear_forward};
    case W::conv_backward: return {W::conv_forward, W::linear_backward};
    case W::depthwise_forward: return {W::depthwise_backward, W::conv_forward};
    case W::depthwise_backward: return {W::depthwise_forward, W::conv_backward};
    case W::linear_forward: return {W::linear_backward, W::conv_forward};
    case W::linear_backward: return {W::linear_forward, W::conv_backward};
    case W::batchnorm_forward: return {W::batchnorm_backward, W::relu_forward};
    case W::batchnorm_backward: return {W::batchnorm_forward, W::relu_backward};
    case W::relu_forward: return {W::relu_backward, W::add};
    case W::relu_backward: return {W::relu_forward, W::accumulate};
    case W::pool_forward: return {W::pool_backward, W::relu_forward};
    case W::pool_backward: return {W::pool_forward, W::relu_backward};
    case W::dropout_forward: return {W::dropout_backward, W::relu_forward};
    case W::dropout_backward: return {W::dropout_forward, W::relu_backward};
    case W::add: return {W::accumulate, W::relu_forward};
    case W::copy: return {W::add, W::relu_forward};
    case W::accumulate: return {W::add, W::relu_backward};
    case W::softmax_forward: return {W::softmax_backward, W::relu_forward};
    case W::softmax_backward: return {W::softmax_forward, W::relu_backward};
    case W::update: return {W::accumulate, W::relu_backward};
  }
  return {};
}

}  // namespace

double fitted_us(const ClassFit& f, double flops, int kernels) {
  if (kernels <= 0) return 0;
  double throughput = f.peak_gflops * 1e3;  // FLOPs per µs
  if (f.saturation_flops > 0 && flops < f.saturation_flops)
    throughput *= std::pow(std::max(flops, 1.0) / f.saturation_flops, f.slope);
  return kernels * f.launch_us + flops / throughput;
}

PerfModel::PerfModel(Profile profile) : profile_(std::move(profile)) {
  if (std::none_of(profile_.compute.begin(), profile_.compute.end(), [](const auto& f) { return f.has_value(); }))
    throw std::invalid_argument("the profile '" + profile_.name + "' has no compute fits");
  if (!(profile_.to_host.gbps > 0) || !(profile_.to_device.gbps > 0))
    throw std::invalid_argument("the profile '" + profile_.name + "' has a host link without bandwidth");
  // Breadth-first through the relatives, so the nearest one lends its fit.
  for (const Choice<WorkClass>& c : kWorkClasses) {
    int& lender = lender_[static_cast<std::size_t>(c.value)];
    lender = -1;
    std::vector<WorkClass> frontier{c.value}, seen{c.value};
    while (lender < 0 && !frontier.empty()) {
      std::vector<WorkClass> next;
      for (WorkClass w : frontier) {
        if (profile_.fit(w)) {
          lender = static_cast<int>(w);
          break;
        }
        for (WorkClass r : relatives(w))
          if (std::find(seen.begin(), seen.end(), r) == seen.end()) {
            seen.push_back(r);
            next.push_back(r);
          }
      }
      frontier = std::move(next);
    }
  }
}

double PerfModel::compute_us(const Work& w) const {
  if (w.kernels <= 0) return 0;
  const int lender = lender_[static_cast<std::size_t>(w.work_class)];
  if (lender < 0)
    throw std::invalid_argument("the profile '" + profile_.name + "' has no fit for " + to_string(w.work_class) +
                                " nor for a related class: measure it on a network with such layers");
  const ClassFit& fit = *profile_.fit(static_cast<WorkClass>(lender));
  if (!is_16bit(w.dtype)) return fitted_us(fit, w.flops, w.kernels);
  const bool dense = w.work_class == WorkClass::conv_forward || w.work_class == WorkClass::conv_backward ||
                     w.work_class == WorkClass::linear_forward || w.work_class == WorkClass::linear_backward;
  const double speedup = dense ? profile_.dense_16bit_speedup : kHalfBytesSpeedup;
  const double launches = w.kernels * fit.launch_us;
  return launches + (fitted_us(fit, w.flops, w.kernels) - launches) / speedup;
}

double PerfModel::copy_us(std::size_t bytes, bool to_host, bool pageable) const {
  if (bytes == 0) return 0;
  const LinkFit& l = to_host ? profile_.to_host : profile_.to_device;
  const double staging_us = pageable ? static_cast<double>(bytes) / (kPageableMemcpyGbps * 1e3) : 0;
  return l.latency_us + static_cast<double>(bytes) / (l.gbps * 1e3) + staging_us;
}

std::vector<std::string> PerfModel::borrowed() const {
  std::vector<std::string> out;
  for (const Choice<WorkClass>& c : kWorkClasses) {
    const int lender = lender_[static_cast<std::size_t>(c.value)];
    if (lender >= 0 && lender != static_cast<int>(c.value))
      out.push_back(std::string(c.name) + " <- " + to_string(static_cast<WorkClass>(lender)));
  }
  return out;
}

}  // namespace tidepool
