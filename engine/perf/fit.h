// Fitting a profile to measurements (AccUDNN §3.3.1 and §3.3.3): each class
// of work's throughput curve with its saturation point, and each direction
// of the host link as latency plus bandwidth.
#pragma once

#include <span>

#include "engine/perf/profile.h"

namespace tidepool {

// The curve of ClassFit through samples of one class, least squares on
// log(time) (relative errors: a 10 µs step and a 10 ms step count alike).
// With the break at log(saturation) fixed the model is linear in
// (log peak, slope), so every break between the samples is tried and the
// best kept; no break (saturated throughout) is one of the candidates.
// Steps that launch several kernels are fitted on their total time, like
// the paper's per-layer times. Throws std::invalid_argument with no samples
// or samples that took no time.
ClassFit fit_class(std::span<const ComputeSample> samples);

// latency + bytes / bandwidth by least squares; the latency is clamped at
// 0 (a negative one would mean copies under it are free). Throws
// std::invalid_argument with no samples or fewer than two distinct sizes
// when they do not all share one.
LinkFit fit_link(std::span<const CopySample> samples);

// Fits every class that has samples and both link directions (a direction
// without samples keeps what it has), from the profile's own samples.
void fit_profile(Profile& profile);

}  // namespace tidepool
