// Fitting throughput curves and the link (AccUDNN §3.3.1, §3.3.3) to
// samples drawn from known curves: the fit gives the curve back.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "engine/perf/fit.h"
#include "engine/perf/perf_model.h"

namespace tidepool {
namespace {

std::vector<ComputeSample> samples_of(const ClassFit& truth, double from, double to, int n) {
  std::vector<ComputeSample> out;
  for (int i = 0; i < n; ++i) {
    const double f = from * std::pow(to / from, i / double(n - 1));
    out.push_back({WorkClass::conv_forward, "layer" + std::to_string(i), 1, f, 1, fitted_us(truth, f, 1)});
  }
  return out;
}

TEST(FitClass, RecoversASaturatingCurveFromItsSamples) {
  const ClassFit truth{.peak_gflops = 100, .saturation_flops = 1e8, .slope = 0.6};
  const auto samples = samples_of(truth, 1e5, 1e10, 41);
  const ClassFit fit = fit_class(samples);
  EXPECT_NEAR(fit.peak_gflops, 100, 0.5);
  EXPECT_NEAR(fit.slope, 0.6, 0.02);
  EXPECT_NEAR(std::log10(fit.saturation_flops), 8, 0.1);
  EXPECT_EQ(fit.samples, 41);
  for (const ComputeSample& s : samples) EXPECT_NEAR(fitted_us(fit, s.flops, 1) / s.us, 1.0, 0.02) << s.flops;
}

TEST(FitClass, SamplesAllPastSaturationGiveAFlatThroughput) {
  const ClassFit truth{.peak_gflops = 40, .saturation_flops = 1e6, .slope = 1};
  const ClassFit fit = fit_class(samples_of(truth, 1e7, 1e9, 9));
  EXPECT_NEAR(fit.peak_gflops, 40, 1e-6);
  EXPECT_EQ(fit.slope, 0);
  EXPECT_EQ(fit.saturation_flops, 0) << "no saturation point inside the data: saturated throughout";
}

TEST(FitClass, AFixedCostBelowSaturationIsSlopeOne) {
  // Every step under 1e7 FLOPs takes the same 10 µs: a launch-bound class.
  const ClassFit truth{.peak_gflops = 1, .saturation_flops = 1e4, .slope = 1};
  const ClassFit fit = fit_class(samples_of(truth, 1e2, 1e6, 21));
  EXPECT_NEAR(fit.slope, 1, 1e-9);
  EXPECT_NEAR(fitted_us(fit, 300, 1), 10, 0.5);
}

TEST(FitClass, RefusesNoSamplesAndSamplesWithoutTime) {
  EXPECT_THROW(fit_class({}), std::invalid_argument);
  const ComputeSample zero{WorkClass::relu_forward, "r", 1, 100, 1, 0};
  EXPECT_THROW(fit_class(std::vector{zero}), std::invalid_argument);
}

TEST(FitLink, RecoversLatencyAndBandwidth) {
  std::vector<CopySample> s;
  for (std::size_t bytes : {1u << 10, 1u << 16, 1u << 20, 1u << 24}) s.push_back({true, bytes, 7 + bytes / (12.0 * 1e3)});
  const LinkFit l = fit_link(s);
  EXPECT_NEAR(l.latency_us, 7, 1e-6);
  EXPECT_NEAR(l.gbps, 12, 1e-9);
  EXPECT_EQ(l.samples, 4);
}

TEST(FitLink, OneSizeGoesThroughTheOriginAndNoTimeIsRefused) {
  const LinkFit l = fit_link(std::vector<CopySample>{{false, 1000000, 100}, {false, 1000000, 100}});
  EXPECT_EQ(l.latency_us, 0);
  EXPECT_NEAR(l.gbps, 10, 1e-9);
  EXPECT_THROW(fit_link({}), std::invalid_argument);
  EXPECT_THROW(fit_link(std::vector<CopySample>{{true, 100, 0}}), std::invalid_argument);
}

TEST(FitProfile, FitsEachClassFromItsOwnSamplesAndLeavesTheOthersOut) {
  Profile p;
  p.compute_samples = samples_of({.peak_gflops = 50, .saturation_flops = 1e7, .slope = 0.5}, 1e5, 1e9, 9);
  for (std::size_t b : {1000u, 100000u}) p.copy_samples.push_back({true, b, b / 5e3});
  fit_profile(p);
  ASSERT_TRUE(p.fit(WorkClass::conv_forward));
  EXPECT_FALSE(p.fit(WorkClass::relu_forward));
  EXPECT_NEAR(p.to_host.gbps, 5, 1e-9);
  EXPECT_EQ(p.to_device.samples, 0) << "no samples: the direction keeps what it had";
}

}  // namespace
}  // namespace tidepool
