// The shipped GPU profiles against the published ResNet-50 training
// throughput they are calibrated on (engine/perf/spec_profiles.h,
// docs/gpu-profiles.md): the sim device's virtual clock, so the figures
// are the same on every machine and however busy it is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"
#include "engine/run/trainer.h"
#include "models/registry.h"

namespace tidepool {
namespace {

constexpr std::int64_t kBatch = 128;

// Images per second of a steady iteration of ResNet-50 on ImageNet shapes.
double images_per_s(const GpuSpec& g, Precision precision) {
  SimDevice device{PerfModel(*specification_profile(g.key))};
  const Network net = models::make_model("resnet50", models::InputKind::imagenet, 1000);
  Trainer trainer(device, net, {.batch = kBatch, .memory = {.precision = precision}});
  std::vector<float> images(static_cast<std::size_t>(kBatch) * 3 * 224 * 224, 0.0f);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(kBatch), 0);
  trainer.train_step(images.data(), labels.data());
  const IterationResult r = trainer.train_step(images.data(), labels.data());
  return kBatch * 1e6 / (r.end_us - r.start_us);
}

TEST(SpecCalibration, ResNet50TrainsAtThePublishedRatesWithin15Percent) {
  for (const GpuSpec& g : gpu_specs()) {
    const double fp32 = images_per_s(g, Precision::fp32);
    const double fp16 = images_per_s(g, Precision::fp16);
    std::printf("%-5s resnet50 batch %lld: fp32 %.0f images/s (published %.0f), fp16 %.0f (published %.0f)\n",
                g.key.c_str(), static_cast<long long>(kBatch), fp32, g.reference.fp32_images_per_s, fp16,
                g.reference.mixed_images_per_s);
    const PublishedThroughput& ref = g.reference;
    ASSERT_GT(ref.fp32_images_per_s + ref.mixed_images_per_s, 0) << g.key << ": a profile with nothing to hold it to";
    if (ref.fp32_images_per_s > 0) EXPECT_NEAR(fp32 / ref.fp32_images_per_s, 1.0, 0.15) << g.key << " fp32";
    if (ref.mixed_images_per_s > 0) EXPECT_NEAR(fp16 / ref.mixed_images_per_s, 1.0, 0.15) << g.key << " fp16";
    if (ref.fp32_images_per_s > 0 && ref.mixed_images_per_s > 0)
      EXPECT_NEAR((fp16 / fp32) / (ref.mixed_images_per_s / ref.fp32_images_per_s), 1.0, 0.15)
          << g.key << ": the speed-up of mixed precision";
    if (g.f16_tensor_tflops > 0) EXPECT_GT(fp16, 1.5 * fp32) << g.key << ": tensor cores";
  }
}

TEST(SpecCalibration, AV100TrainsFp16AtLeastTwoAndAHalfTimesFasterThanFp32) {
  const GpuSpec& v100 = *std::find_if(gpu_specs().begin(), gpu_specs().end(), [](const GpuSpec& g) { return g.key == "v100"; });
  EXPECT_GE(images_per_s(v100, Precision::fp16), 2.5 * images_per_s(v100, Precision::fp32));
}

TEST(SpecCalibration, AGpuWithoutBf16RefusesIt) {
  for (const GpuSpec& g : gpu_specs()) {
    if (g.bf16) continue;
    try {
      images_per_s(g, Precision::bf16);
      ADD_FAILURE() << g.key << " trained bf16";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(g.name + " has no bf16 arithmetic"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tidepool
