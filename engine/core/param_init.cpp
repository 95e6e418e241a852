#include "engine/core/param_init.h"

#include <cmath>
#include <numbers>

namespace tidepool {
namespace {

struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): 53 random bits, never exactly 0 (Box-Muller takes a log).
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
};

}  // namespace

void init_parameter(const ParamSpec& spec, std::uint64_t seed, std::span<float> out) {
  SplitMix64 rng{seed};
  switch (spec.init) {
    case ParamInit::zeros:
      for (float& v : out) v = 0.0f;
      break;
    case ParamInit::ones:
      for (float& v : out) v = 1.0f;
      break;
    case ParamInit::uniform_fan_in: {
      const double bound = 1.0 / std::sqrt(static_cast<double>(spec.fan_in));
      for (float& v : out) v = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
      break;
    }
    case ParamInit::kaiming_normal_fan_out: {
      const double stddev = std::sqrt(2.0 / static_cast<double>(spec.fan_out));
      for (float& v : out) {
        const double r = std::sqrt(-2.0 * std::log(rng.uniform()));
        v = static_cast<float>(stddev * r * std::cos(2.0 * std::numbers::pi * rng.uniform()));
      }
      break;
    }
  }
}


}  // namespace tidepool
