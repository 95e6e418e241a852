// The figures the issues ask Tidepool to show, as tests that take minutes:
// run with `ctest --test-dir build -L long`.
#include <gtest/gtest.h>

#include "app/batch_run.h"
#include "app/plan_command.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "models/registry.h"
#include "testing/temp_dir.h"

namespace tidepool::app {
namespace {

// SmartPool's eight CIFAR models at batch 100: once it has learned the
// iteration, its footprint is within 2% of the peak load.
TEST(PaperFigures, SmartPoolCompetitiveRatioOnTheCifarModels) {
  CpuKernels kernels;
  for (const char* model : {"resnet18", "resnet34", "resnet50", "resnet101", "vgg11", "vgg13", "vgg16", "vgg19"}) {
    const Network net = models::make_model(model, models::InputKind::cifar, 10);
    for (const PlanRow& row : plan_table(net, 100, kernels, {"smartpool"}))
      if (row.settings.mode == OffloadMode::base) {
        EXPECT_LE(row.memory.competitive_ratio(), 1.02)
            << model << " " << to_string(row.settings.scheme) << " " << to_string(row.settings.order);
      }
  }
}

// resnet20 on the generated dataset: three epochs reach 90% test accuracy.
TEST(PaperFigures, Resnet20LearnsTheGeneratedDatasetInThreeEpochs) {
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "generated";
  o.epochs = 3;
  o.seed = 1;
  o.progress = false;
  const testing::TempDir dir("long_resnet20");
  o.out = (dir / "run").string();
  const auto summary = run_batch(o, std::nullopt);
  EXPECT_GE(summary["final_test_accuracy"].get<double>(), 0.90);
}

}  // namespace
}  // namespace tidepool::app
