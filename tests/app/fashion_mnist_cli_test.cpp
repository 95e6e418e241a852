// `--dataset fashion-mnist` through the tidepool executable: a tiny folder
// of real IDX files trains, a missing one says which package to install,
// and `plan` sees the CIFAR input it is fed as.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/idx_files.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"

namespace tidepool {
namespace {

testing::CommandResult run(const std::string& args) {
  return testing::run_command(std::string(TIDEPOOL_BINARY) + " " + args);
}

TEST(FashionMnistCli, ATinyFolderTrainsAndTheRunSaysWhatItRead) {
  testing::TempDir dir("cli_fashion");
  testing::write_tiny_fashion_mnist(dir / "data", 64, 24);
  const auto r = run("--batch --quiet --model resnet20 --dataset fashion-mnist --batch-size 16 --iterations 2 --data " +
                     (dir / "data").string() + " --out " + (dir / "run").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("on fashion-mnist (train, " + (dir / "data").string() + ")"), std::string::npos) << r.output;
  std::ifstream in(dir / "run" / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["dataset"], "fashion-mnist");
  EXPECT_EQ(summary["iterations"], 2);
  EXPECT_GE(summary["final_test_accuracy"].get<double>(), 0.0);
}

TEST(FashionMnistCli, AMissingFolderSaysToInstallThePackage) {
  const auto r = run("--batch --quiet --dataset fashion-mnist --data /nonexistent/fashion --iterations 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/fashion"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dataset-fashion-mnist"), std::string::npos) << r.output;
}

// Fed as 3x32x32 with ten classes, it plans exactly as CIFAR-10 does.
TEST(FashionMnistCli, PlanIsCifar10s) {
  const std::string args = " --model resnet20 --batch-size 32 --heuristic best-fit --json";
  const auto fashion = run("plan --dataset fashion-mnist" + args);
  ASSERT_EQ(fashion.status, 0) << fashion.output;
  EXPECT_EQ(fashion.output, run("plan --dataset cifar10" + args).output);
}

}  // namespace
}  // namespace tidepool
