// The performance model (AccUDNN §3.3): a step's compute time from its work
// (eq. 2, per class of work) and a copy's time over the host link (eq. 5),
// from a profile. The sim device runs on it and the AccUDNN planner
// predicts with it.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "engine/perf/profile.h"

namespace tidepool {

// A pageable copy's extra host memcpy (Device::reserve_pageable), GB/s
// (1e9 bytes/s), for every profile: a profile measures the link, not the
// host's memory. From Zhuang et al. Fig. 4: pageable copies took
// 2.5 (device → host) and 3 (host → device) times as long as pinned ones
// over a GTX 1060's PCIe 3.0 ×16 link (about 12 GB/s pinned), so the
// staging memcpy added 1.5 to 2 times the link's time: 8 and 6 GB/s. We
// take the middle, and model the two hops one after the other, as those
// ratios imply (no overlap between them).
inline constexpr double kPageableMemcpyGbps = 7.0;

class PerfModel {
 public:
  // Throws std::invalid_argument when the profile has no compute fits at
  // all, or a link without bandwidth.
  explicit PerfModel(Profile profile);

  // Microseconds for a step's work; 0 for a step that launched nothing.
  // A 16-bit step (Work::dtype) computes faster than its class's f32 fit:
  // dense work by the profile's dense_16bit_speedup, memory-bound work by
  // kHalfBytesSpeedup (profile.h).
  // A class the profile has no fit for borrows the nearest related class's
  // (its other pass first, then depthwise/linear → conv, memory-bound
  // classes → relu: perf_model.cpp has the table), as borrowed() lists;
  // throws std::invalid_argument naming the class when nothing related
  // has a fit.
  double compute_us(const Work& work) const;
  // A copy over the host link, device → host (to_host) or back.
  // From or to pageable host memory (`pageable`), the staging buffer's
  // memcpy at kPageableMemcpyGbps comes on top.
  double copy_us(std::size_t bytes, bool to_host, bool pageable = false) const;

  const Profile& profile() const { return profile_; }
  // "depthwise.forward ← conv.forward", one per class that borrowed a fit.
  std::vector<std::string> borrowed() const;

 private:
  Profile profile_;
  // Per class, the class whose fit it uses (-1: none related has one).
  std::array<int, kWorkClassCount> lender_{};
};

// Time of `flops` under one class's fit, kernels included (ClassFit's formula).
double fitted_us(const ClassFit& fit, double flops, int kernels);

}  // namespace tidepool
