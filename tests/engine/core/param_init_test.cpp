// Parameter initialisation (engine/core/param_init.h): each distribution
// has the moments and the shape its name promises, within five standard
// errors of a sample of 2^18 values (the standard errors are the
// distributions' own, worked out below, not the sample's); the generator is
// pinned, so a seed gives the same values everywhere; different seeds give
// uncorrelated streams; and a trainer draws every parameter tensor from a
// stream of its own.
#include "engine/core/param_init.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_device.h"
#include "engine/layers/batchnorm.h"
#include "engine/layers/conv2d.h"
#include "engine/layers/flatten.h"
#include "engine/layers/linear.h"
#include "engine/layers/pooling.h"
#include "engine/layers/softmax_xent.h"
#include "engine/run/trainer.h"

namespace tidepool {
namespace {

constexpr std::size_t kSamples = std::size_t{1} << 18;

std::vector<float> draw(ParamInit init, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed,
                        std::size_t n = kSamples) {
  ParamSpec spec;
  spec.suffix = "weight";
  spec.shape = Shape{static_cast<std::int64_t>(n)};
  spec.init = init;
  spec.fan_in = fan_in;
  spec.fan_out = fan_out;
  std::vector<float> out(n, -7.0f);  // not a value any init gives
  init_parameter(spec, seed, out);
  return out;
}

// The sample means of x, x^2 and x^4 (raw moments: every distribution here
// has mean 0).
struct Moments {
  double m1 = 0, m2 = 0, m4 = 0;
};
Moments moments(const std::vector<float>& v) {
  Moments m;
  for (float f : v) {
    const double x = f;
    m.m1 += x;
    m.m2 += x * x;
    m.m4 += x * x * x * x;
  }
  const double n = static_cast<double>(v.size());
  return {m.m1 / n, m.m2 / n, m.m4 / n};
}

// Pearson's correlation of two equally long samples.
double correlation(const std::vector<float>& a, const std::vector<float>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  double sa = 0, sb = 0;
  for (std::size_t i = 0; i < n; ++i) sa += a[i], sb += b[i];
  const double ma = sa / static_cast<double>(n), mb = sb / static_cast<double>(n);
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb);
}

// The largest gap between the sample's distribution function and `cdf`
// (Kolmogorov-Smirnov's D). For n values from `cdf`, sqrt(n) D exceeds
// 1.95 with probability 0.001.
double ks_distance(std::vector<float> v, const std::function<double(double)>& cdf) {
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  double d = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double f = cdf(v[i]);
    d = std::max({d, (static_cast<double>(i) + 1) / n - f, f - static_cast<double>(i) / n});
  }
  return d;
}

// Five standard errors of a mean of kSamples values whose variance is `variance`.
double five_se(double variance) { return 5 * std::sqrt(variance / static_cast<double>(kSamples)); }

TEST(ParamInit, ZerosAndOnesAreExactlyThat) {
  for (float v : draw(ParamInit::zeros, 1, 1, 3, 1000)) ASSERT_EQ(v, 0.0f);
  for (float v : draw(ParamInit::ones, 1, 1, 3, 1000)) ASSERT_EQ(v, 1.0f);
}

// U(-b, b) with b = 1/sqrt(fan_in): E x = 0, E x^2 = b^2/3, E x^4 = b^4/5;
// Var x = b^2/3, Var x^2 = b^4/5 - b^4/9 = 4b^4/45, Var x^4 = b^8/9 - b^8/25
// = 16b^8/225.
TEST(ParamInit, UniformFanInHasTheMomentsAndShapeOfUMinusBToB) {
  for (std::int64_t fan_in : {1, 9, 576}) {
    SCOPED_TRACE("fan_in " + std::to_string(fan_in));
    const double b = 1 / std::sqrt(static_cast<double>(fan_in));
    const std::vector<float> v = draw(ParamInit::uniform_fan_in, fan_in, /*fan_out=*/7, 11);
    const Moments m = moments(v);
    EXPECT_NEAR(m.m1, 0, five_se(b * b / 3));
    EXPECT_NEAR(m.m2, b * b / 3, five_se(4 * std::pow(b, 4) / 45));
    EXPECT_NEAR(m.m4, std::pow(b, 4) / 5, five_se(16 * std::pow(b, 8) / 225));
    // Inside the bounds, and reaching them: the chance that no value of
    // 2^18 comes within b/1000 of b is (1 - 1/2000)^(2^18), about e^-131.
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    EXPECT_GE(*lo, -b);
    EXPECT_LE(*hi, b);
    EXPECT_LT(*lo, -b * 0.999);
    EXPECT_GT(*hi, b * 0.999);
    const double d = ks_distance(v, [b](double x) { return std::clamp((x + b) / (2 * b), 0.0, 1.0); });
    EXPECT_LT(d * std::sqrt(static_cast<double>(kSamples)), 1.95) << "not uniform: D = " << d;
  }
}

// N(0, s^2) with s^2 = 2/fan_out: E x^2 = s^2, E x^4 = 3s^4; Var x^2 = 2s^4,
// Var x^4 = 105s^8 - 9s^8 = 96s^8 (E x^8 = 105s^8).
TEST(ParamInit, KaimingNormalFanOutHasTheMomentsAndShapeOfNZeroTwoOverFanOut) {
  for (std::int64_t fan_out : {1, 72, 576}) {
    SCOPED_TRACE("fan_out " + std::to_string(fan_out));
    const double s2 = 2.0 / static_cast<double>(fan_out);
    const std::vector<float> v = draw(ParamInit::kaiming_normal_fan_out, /*fan_in=*/3, fan_out, 11);
    const Moments m = moments(v);
    EXPECT_NEAR(m.m1, 0, five_se(s2));
    EXPECT_NEAR(m.m2, s2, five_se(2 * s2 * s2));
    EXPECT_NEAR(m.m4, 3 * s2 * s2, five_se(96 * std::pow(s2, 4)));
    const double s = std::sqrt(s2);
    const double d = ks_distance(v, [s](double x) { return 0.5 * std::erfc(-x / (s * std::sqrt(2.0))); });
    EXPECT_LT(d * std::sqrt(static_cast<double>(kSamples)), 1.95) << "not normal: D = " << d;
    for (float x : v) ASSERT_TRUE(std::isfinite(x));
  }
}

// The generator is ours (splitmix64, Box-Muller), so these values are the
// same with any standard library. Worked out apart from this code (Python:
// splitmix64 from seed 42, uniform = ((z >> 11) + 0.5) * 2^-53, then each
// formula of param_init.cpp in double, rounded to float).
TEST(ParamInit, ASeedGivesTheSameValuesEverywhere) {
  const std::vector<float> u = draw(ParamInit::uniform_fan_in, 9, 1, 42, 4);
  EXPECT_EQ(u, (std::vector<float>{0.161043257f, -0.226726398f, -0.14759925f, -0.103872858f}));
  const std::vector<float> k = draw(ParamInit::kaiming_normal_fan_out, 1, 576, 42, 4);
  // Through std::log and std::cos: equal to a few ulps of a float.
  const float want[] = {0.0244375952f, -0.052554898f, 0.101917252f, 0.0321509913f};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(k[i], want[i]) << i;
  // And the same seed, the same bits, however often it is drawn.
  EXPECT_EQ(draw(ParamInit::kaiming_normal_fan_out, 1, 576, 42), draw(ParamInit::kaiming_normal_fan_out, 1, 576, 42));
}

// Streams from different seeds are uncorrelated: neighbouring seeds, seeds
// a bit apart, and within one stream each value and the next. Five
// standard errors of a correlation of independent samples: 5/sqrt(n).
TEST(ParamInit, DifferentSeedsGiveUncorrelatedStreams) {
  const double bound = 5 / std::sqrt(static_cast<double>(kSamples));
  for (ParamInit init : {ParamInit::uniform_fan_in, ParamInit::kaiming_normal_fan_out}) {
    const std::vector<float> s0 = draw(init, 9, 9, 0), s1 = draw(init, 9, 9, 1), s2 = draw(init, 9, 9, 2);
    const std::vector<float> high = draw(init, 9, 9, std::uint64_t{1} << 63);
    EXPECT_NE(s0, s1);
    EXPECT_LT(std::abs(correlation(s0, s1)), bound);
    EXPECT_LT(std::abs(correlation(s1, s2)), bound);
    EXPECT_LT(std::abs(correlation(s0, high)), bound);
    const std::vector<float> next(s1.begin() + 1, s1.end());
    EXPECT_LT(std::abs(correlation(s1, next)), bound) << "each value and the next";
  }
}

// Two convolutions of the same shape and a linear layer behind them.
Network twin_convolutions() {
  Network n("twins", {32, 6, 6}, 4);
  std::string x = n.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 32, .padding = 1}), {"data"});
  x = n.add(std::make_unique<BatchNorm>("bn1"), {x});
  x = n.add(std::make_unique<Conv2d>("conv2", Conv2dOptions{.out_channels = 32, .padding = 1}), {x});
  x = n.add(std::make_unique<Pool2d>("gap", PoolOptions{.kind = PoolKind::avg, .global = true}), {x});
  x = n.add(std::make_unique<Flatten>("flatten"), {x});
  x = n.add(std::make_unique<Linear>("fc", 4), {x});
  n.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {x, "labels"});
  return n;
}

// A fresh trainer's parameters, by tensor name ("conv1.weight", ...).
std::map<std::string, std::vector<float>> initial_parameters(const Network& net, std::uint64_t seed) {
  CpuDevice device;
  Trainer trainer(device, net, {.batch = 2, .seed = seed});
  const std::vector<float> all = trainer.read_parameters();
  // read_parameters: every weight-role tensor of the schedule's persistent
  // ones, in that order.
  std::map<std::string, std::vector<float>> out;
  std::size_t at = 0;
  const Schedule& s = trainer.train_schedule();
  for (int t : s.persistent) {
    const TensorInfo& info = s.tensors[static_cast<std::size_t>(t)].info;
    if (info.role != Role::weight) continue;
    const std::size_t n = info.bytes() / sizeof(float);
    out[info.name].assign(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  EXPECT_EQ(at, all.size());
  return out;
}

// The trainer seeds each parameter tensor from the run's seed and the
// tensor's ordinal: two convolutions of the same shape get uncorrelated
// values, each from its own layer's distribution, a run with another seed
// other values again, and the same seed the same bits.
TEST(ParamInit, ATrainerDrawsEveryParameterTensorFromAStreamOfItsOwn) {
  const Network net = twin_convolutions();
  std::map<std::string, std::vector<float>> run = initial_parameters(net, 5);
  const std::vector<float>& w1 = run["conv1.weight"];
  const std::vector<float>& w2 = run["conv2.weight"];
  const std::size_t n = 32 * 32 * 3 * 3;
  ASSERT_EQ(w1.size(), n);
  ASSERT_EQ(w2.size(), n);
  const double bound = 5 / std::sqrt(static_cast<double>(n));
  EXPECT_LT(std::abs(correlation(w1, w2)), bound) << "the two convolutions drew the same stream";
  // N(0, 2/fan_out), fan_out = 32 * 3 * 3: five standard errors of E x^2 over n values.
  const double s2 = 2.0 / (32 * 9);
  for (const auto* w : {&w1, &w2}) EXPECT_NEAR(moments(*w).m2, s2, 5 * std::sqrt(2 * s2 * s2 / static_cast<double>(n)));
  // The linear layer: U(-1/sqrt(32), 1/sqrt(32)), fan_in = 32.
  const double b = 1 / std::sqrt(32.0);
  for (const char* name : {"fc.weight", "fc.bias"}) {
    ASSERT_FALSE(run[name].empty()) << name;
    for (float v : run[name]) EXPECT_LE(std::abs(v), b) << name;
  }
  EXPECT_NE(run["fc.weight"][0], run["fc.bias"][0]);
  // Batch norm: scale 1, shift 0, running mean 0 and variance 1.
  EXPECT_EQ(run["bn1.weight"], std::vector<float>(32, 1.0f));
  EXPECT_EQ(run["bn1.bias"], std::vector<float>(32, 0.0f));
  EXPECT_EQ(run["bn1.running_mean"], std::vector<float>(32, 0.0f));
  EXPECT_EQ(run["bn1.running_var"], std::vector<float>(32, 1.0f));

  const std::map<std::string, std::vector<float>> again = initial_parameters(net, 5);
  EXPECT_EQ(again, run) << "the same seed, the same parameters";
  std::map<std::string, std::vector<float>> other = initial_parameters(net, 6);
  EXPECT_LT(std::abs(correlation(w1, other["conv1.weight"])), bound) << "seeds 5 and 6";
}

}  // namespace
}  // namespace tidepool
