// The tidepool executable on bad input: a clear message naming the problem
// and a non-zero exit, never an abort.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool {
namespace {

using Result = testing::CommandResult;

Result run(const std::string& args) { return testing::run_command(std::string(TIDEPOOL_BINARY) + " " + args); }

void expect_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.output;
}

TEST(Cli, MissingDataFolderNamesThePath) {
  expect_error(run("--batch --quiet --dataset cifar10 --data /nonexistent/cifar --iterations 1"), "/nonexistent/cifar");
}

TEST(Cli, UnknownModeAndSwapScoreListTheValidOnes) {
  expect_error(run("--batch --quiet --mode swapall --iterations 1"), "valid: base, all, conv, aconv, autoswap, dyn");
  expect_error(run("--batch --quiet --mode autoswap --swap-score size --iterations 1"), "valid: doa, aoa, wdoa, swdoa");
  expect_error(run("--batch --quiet --compress-threads -2 --iterations 1"), "--compress-threads");
}

TEST(Cli, AutoSwapBelowItsSmallestPoolNamesIt) {
  expect_error(run("--batch --quiet --model resnet20 --mode autoswap --budget 1MiB --iterations 1"),
               "the smallest budget that works is");
}

TEST(Cli, UnknownModelListsTheValidOnes) {
  testing::TempDir dir("cli_model");
  testing::write_tiny_cifar10(dir.path());
  const Result r = run("--batch --quiet --model resnet7 --dataset cifar10 --data " + dir.path().string());
  expect_error(r, "resnet7");
  EXPECT_NE(r.output.find("resnet20"), std::string::npos) << r.output;
}

TEST(Cli, UnknownDatasetListsTheValidOnes) {
  const Result r = run("--batch --quiet --dataset mnist --data /tmp");
  expect_error(r, "mnist");
  EXPECT_NE(r.output.find("cifar10"), std::string::npos) << r.output;
}

TEST(Cli, WindowOptionsWithBatchAreRefused) {
  for (const char* option : {"--overlap-scenario", "--fragmentation-scenario", "--screenshot shot.png"})
    expect_error(run(std::string("--batch --quiet --iterations 1 ") + option), "leave out --batch");
}

TEST(Cli, ZeroBatchSizeIsRefused) {
  testing::TempDir dir("cli_batch");
  testing::write_tiny_cifar10(dir.path());
  expect_error(run("--batch --quiet --batch-size 0 --dataset cifar10 --data " + dir.path().string()), "batch");
}

TEST(Cli, NegativeCheckpointIntervalIsRefused) {
  expect_error(run("--batch --quiet --checkpoint-every -3 --iterations 1"), "--checkpoint-every");
}

TEST(Cli, TruncatedCifarFileIsNamed) {
  testing::TempDir dir("cli_trunc");
  testing::write_tiny_cifar10(dir.path());
  std::filesystem::resize_file(dir.path() / "data_batch_3.bin", 3073 * 2 + 100);
  expect_error(run("--batch --quiet --dataset cifar10 --data " + dir.path().string()), "data_batch_3.bin");
}

TEST(Cli, CheckpointOfAnotherModelIsRefused) {
  testing::TempDir dir("cli_resume");
  testing::write_tiny_cifar10(dir.path() / "data");
  const std::string data = " --dataset cifar10 --batch-size 32 --data " + (dir.path() / "data").string();
  const std::string out = (dir.path() / "run").string();
  ASSERT_EQ(run("--batch --quiet --model resnet20 --iterations 1 --out " + out + data).status, 0);
  expect_error(run("--batch --quiet --model resnet32 --resume " + out + data), "resnet20");
  expect_error(run("--batch --quiet --resume " + (dir.path() / "nothing").string()), "checkpoint");
}

TEST(Cli, ModelsTableHasOneRowPerModelAndInput) {
  const Result r = run("models");  // subcommand options come after it; none here
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("resnet18           imagenet        11689512"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("vgg16              imagenet       138357544"), std::string::npos);
}

}  // namespace
}  // namespace tidepool
