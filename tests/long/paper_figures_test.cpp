// The figures the issues ask Tidepool to show, as tests that take minutes:
// run with `ctest --test-dir build -L long`.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/batch_run.h"
#include "app/commands/plan_command.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "models/registry.h"
#include "engine/comm/mpi_communicator.h"
#include "testing/mpirun.h"
#include "testing/run_command.h"
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

// Zhuang's 16-bit training (issue 17): the same run in bf16 and in fp16
// (with its loss scale) reaches fp32's test accuracy within one point. A
// run that ends higher reaches it. Six epochs, on either path a processor
// takes: after three the accuracy still moves by a point from run to run,
// and on oneDNN's own bf16 kernels (AVX-512 BF16) bf16 and fp16 ended 1.2
// points under fp32; after six, seed 1 gave fp32 99.90 %, bf16 99.95 %,
// fp16 99.80 % there (docs/sixteen-bit.md).
TEST(PaperFigures, Resnet20In16BitsMatchesFp32sAccuracyWithinOnePoint) {
  const testing::TempDir dir("long_precision");
  auto accuracy = [&](Precision p) {
    RunSettings o;
    o.model = "resnet20";
    o.dataset = "generated";
    o.epochs = 6;  // after 3 the accuracy still moves by a point from run to run (docs/sixteen-bit.md)
    o.seed = 1;
    o.progress = false;
    o.memory.precision = p;
    o.out = (dir / to_string(p)).string();
    const auto summary = run_batch(o, std::nullopt);
    EXPECT_EQ(summary["status"], "done") << to_string(p);
    return summary["final_test_accuracy"].get<double>();
  };
  const double fp32 = accuracy(Precision::fp32);
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const double got = accuracy(p);
    std::printf("resnet20, generated, 6 epochs: %s %.2f %% against fp32 %.2f %%\n", to_string(p), 100 * got, 100 * fp32);
    EXPECT_GE(got, fp32 - 0.01) << to_string(p);
  }
}

// Data-parallel (issue 18): `mpirun -np 2` at the same global batch (128,
// 64 per rank) reaches one process's test accuracy within a point. Batch
// norm's statistics are each rank's (over 64 images, not 128), which is
// the one thing that differs. Its rates are the README's cpu scaling row.
TEST(PaperFigures, TwoRanksReachOneProcesssAccuracyWithinOnePoint) {
  if (!MpiCommunicator::available() || testing::run_command("command -v mpirun").status != 0)
    GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const testing::TempDir dir("long_ranks");
  auto run = [&](int ranks) {
    const std::string out = (dir / ("ranks" + std::to_string(ranks))).string();
    const std::string launcher =
        ranks > 1 ? testing::mpirun(ranks) : "";
    const auto r = testing::run_command(launcher + TIDEPOOL_BINARY +
                                        " --batch --quiet --model resnet20 --dataset generated --epochs 3 --seed 1 "
                                        "--out " + out);
    EXPECT_EQ(r.status, 0) << r.output;
    std::ifstream in(out + "/summary.json");
    return nlohmann::json::parse(in);
  };
  const auto one = run(1), two = run(2);
  const double a1 = one["final_test_accuracy"], a2 = two["final_test_accuracy"];
  std::printf("resnet20, generated, 3 epochs at batch 128: one process %.2f %% (%.0f images/s), two ranks %.2f %% "
              "(%.0f images/s)\n",
              100 * a1, one["images_per_second"].get<double>(), 100 * a2, two["images_per_second"].get<double>());
  EXPECT_NEAR(a2, a1, 0.01);
}

}  // namespace
}  // namespace tidepool::app
