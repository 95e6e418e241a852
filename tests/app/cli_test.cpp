// The tidepool executable on bad input: a clear message naming the problem
// and a non-zero exit, never an abort.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "app/cli.h"
#include "testing/run_command.h"
#include "testing/run_here.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool {
namespace {

using Result = testing::CommandResult;

Result run(const std::string& args) { return testing::run_command(std::string(TIDEPOOL_BINARY) + " " + args); }

// The same command line in this process, its stderr captured: for the many
// checks that refuse it while it is read.
Result run_here(const std::string& args) { return testing::run_here(args); }

void expect_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.output;
}

// A malformed command line exits 2 (as getopt and argparse tools do), a bad
// value 1; a slip in a subcommand, an option or a choice gets a guess.
TEST(Cli, UsageErrorsExitTwoWithAGuessAndBadValuesOne) {
  const Result sub = run_here("veiw r20");
  EXPECT_EQ(sub.status, 2) << sub.output;
  EXPECT_NE(sub.output.find("'veiw': did you mean 'view'?"), std::string::npos) << sub.output;
  EXPECT_EQ(sub.output.find("'r20': did you mean"), std::string::npos) << sub.output;
  const Result option = run_here("--batch --modle resnet20");
  EXPECT_EQ(option.status, 2) << option.output;
  EXPECT_NE(option.output.find("'--modle': did you mean '--model'?"), std::string::npos) << option.output;
  const Result sub_option = run_here("plan --modle resnet20");
  EXPECT_EQ(sub_option.status, 2) << sub_option.output;
  EXPECT_NE(sub_option.output.find("'--modle': did you mean '--model'?"), std::string::npos) << sub_option.output;
  const Result value = run_here("--batch --quiet --mode al --iterations 1");
  expect_error(value, "unknown memory mode 'al'");
  EXPECT_NE(value.output.find("did you mean 'all'?"), std::string::npos) << value.output;
  EXPECT_EQ(run_here("--help").status, 0);
}

TEST(Cli, MissingDataFolderNamesThePath) {
  expect_error(run("--batch --quiet --dataset cifar10 --data /nonexistent/cifar --iterations 1"), "/nonexistent/cifar");
}

TEST(Cli, UnknownModeAndSwapScoreListTheValidOnes) {
  expect_error(run("--batch --quiet --mode swapall --iterations 1"), "valid: base, all, conv, aconv, autoswap, dyn");
  expect_error(run("--batch --quiet --mode autoswap --swap-score size --iterations 1"), "valid: doa, aoa, wdoa, swdoa, bo");
  expect_error(run("--batch --quiet --compress-threads -2 --iterations 1"), "--compress-threads");
}

TEST(Cli, UnknownPrecisionListsTheValidOnes) {
  expect_error(run_here("--batch --quiet --precision fp8 --iterations 1"), "valid: fp32, bf16, fp16");
  expect_error(run_here("plan --model resnet20 --precision bf16 half"), "valid: fp32, bf16, fp16");
}

TEST(Cli, UnknownFusionListsTheValidOnes) {
  expect_error(run_here("--batch --quiet --fuse bn --iterations 1"), "unknown fusion 'bn' (valid: none, relu)");
  expect_error(run_here("plan --model resnet20 --fuse all"), "unknown fusion 'all' (valid: none, relu)");
  expect_error(run_here("tune --budget 1GiB --fuse all"), "unknown fusion 'all' (valid: none, relu)");
  expect_error(run_here("profile -o x.json --fuse all"), "unknown fusion 'all' (valid: none, relu)");
}

// A run keeps the graph it was built with: resuming it unfused refuses, and
// leaving --fuse out resumes it fused, as it was.
TEST(Cli, ResumingWithAnotherFusionIsRefused) {
  testing::TempDir dir("cli_fuse_resume");
  const std::string out = (dir.path() / "run").string();
  ASSERT_EQ(run("--batch --model resnet20 --fuse relu --batch-size 8 --iterations 1 --out " + out).status, 0);
  expect_error(run("--batch --quiet --fuse none --iterations 2 --resume " + out), "--fuse none (the run's: relu)");
  const Result resumed = run("--batch --iterations 2 --resume " + out);
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("training resnet20 with its ReLUs fused"), std::string::npos) << resumed.output;
}

TEST(Cli, UnknownHostMemoryAndCopyEngineListTheValidOnes) {
  expect_error(run("--batch --quiet --host-memory paged --iterations 1"), "unknown host memory 'paged' (valid: pinned, pageable)");
  expect_error(run("--batch --quiet --copy-engine thread --iterations 1"), "unknown copy engine 'thread' (valid: stream, threads)");
  expect_error(run("--batch --quiet --mode all --compress --host-memory pageable --iterations 1"),
               "--host-memory pageable is for uncompressed offloads");
  expect_error(run("--batch --quiet --device sim --profile m40 --mode all --copy-engine threads --iterations 1"),
               "run --copy-engine threads on the cpu or cuda device");
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
  // Without --data too: an unknown name is not asked for a folder, and a
  // slip gets a guess, in a run and in plan alike.
  const Result slip = run_here("--batch --quiet --dataset imagenett --iterations 1");
  expect_error(slip, "unknown dataset 'imagenett'");
  EXPECT_EQ(slip.output.find("needs --data"), std::string::npos) << slip.output;
  EXPECT_NE(slip.output.find("did you mean 'imagenet'?"), std::string::npos) << slip.output;
  expect_error(run_here("plan --dataset cifar10-shapes"), "unknown dataset 'cifar10-shapes'");
}

TEST(Cli, WindowOptionsWithBatchAreRefused) {
  for (const char* option : {"--overlap-scenario", "--fragmentation-scenario", "--screenshot shot.png", "--show-rank 1"})
    expect_error(run(std::string("--batch --quiet --iterations 1 ") + option), "leave out --batch");
}

// A heuristic is checked as it is read, with a guess; a run's option put
// before a subcommand is not the subcommand's, and is refused.
TEST(Cli, AHeuristicIsCheckedAsItIsReadAndRunOptionsGoAfterTheSubcommand) {
  const Result bad = run_here("--batch --heuristic best-fti");
  expect_error(bad, "unknown allocator heuristic 'best-fti'");
  EXPECT_NE(bad.output.find("did you mean 'best-fit'?"), std::string::npos) << bad.output;
  expect_error(run_here("tune --budget 20m --copy-engine threads"), "--copy-engine changes nothing tune decides");
  expect_error(run_here("tune --budget 20m --mode all"), "leave out --mode");
  const Result before = run_here("--model vgg16 plan");
  EXPECT_EQ(before.status, 2) << before.output;
  EXPECT_NE(before.output.find("--model before 'plan' is not the subcommand's"), std::string::npos) << before.output;
}

// The window saves its session only where it is told to (--out DIR or
// --resume DIR): the folder's other options without one are refused, not
// ignored; and --out into a folder holding a run is refused before any
// window opens, as --batch refuses it, and the folder is left as it was.
TEST(Cli, TheWindowWritesARunFolderOnlyWithOut) {
  for (const char* option : {"--force", "--stop-after 2", "--checkpoint-every 2", "--trace-iterations 2",
                             "--force --stop-after 2"}) {
    const Result r = run_here(option);
    expect_error(r, "the window writes a run folder only with --out DIR");
    for (std::istringstream words(option); words;) {  // every one named
      std::string word;
      if (words >> word && word.rfind("--", 0) == 0) EXPECT_NE(r.output.find(word), std::string::npos) << word;
    }
  }
  testing::TempDir dir("window-out");
  const std::filesystem::path run = dir.path() / "run";
  std::filesystem::create_directories(run);
  std::ofstream(run / "summary.json") << "{}";
  const Result r = run_here("--out " + run.string() + " --screenshot " + (dir.path() / "shot.png").string());
  if (r.output.find("this build has no window") != std::string::npos) GTEST_SKIP() << r.output;
  expect_error(r, "--out " + run.string() + " holds a run (summary.json): continue it with --resume " + run.string() +
                      ", give --force to replace it");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1) << "only the run folder";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(run), {}), 1);
}

TEST(Cli, ShowingAnotherRankOfOneProcessIsRefused) {
  expect_error(run("--show-rank 1 --screenshot shot.png"),
               "--show-rank 1: this run is one process (start ranks with mpirun -np N)");
}

// Every numeric option is checked as the command line is read: the message
// names the option and the text, and nothing starts (the data folder
// does not exist, so an option let through would fail on that instead).
TEST(Cli, BadNumbersAreRefusedNamingTheOptionAndTheValue) {
  const std::pair<std::string, std::string> cases[] = {
      {"--lr nan", "--lr: must be a finite number, not nan"},
      {"--lr -1", "--lr: must be at least 0, not -1"},
      {"--lr inf", "--lr: must be a finite number, not inf"},
      {"--lr 1e39", "--lr: 1e39 is outside a 32-bit float's range"},
      {"--lr fast", "--lr: must be a number, not fast"},
      {"--momentum inf", "--momentum: must be a finite number, not inf"},
      {"--momentum 1.5", "--momentum: must be at most 1, not 1.5"},
      {"--momentum -0.1", "--momentum: must be at least 0, not -0.1"},
      {"--weight-decay -1e-4", "--weight-decay: must be at least 0, not -1e-4"},
      {"--weight-decay nan", "--weight-decay: must be a finite number, not nan"},
      {"--link-gbps -1", "--link-gbps: must be at least 0, not -1"},
      {"--link-gbps inf", "--link-gbps: must be a finite number, not inf"},
      {"--lookahead -1", "--lookahead: must be at least 0, not -1"},
      {"--lookahead 1.5", "--lookahead: must be a whole number, not 1.5"},
      {"--lookahead 99999999999", "--lookahead: 99999999999 is too large a number"},
      {"--batch-size 0", "--batch-size: must be at least 1, not 0"},
      {"--batch-size 2000000", "--batch-size: must be at most 1048576, not 2000000"},
      {"--batch-size 99999999999999999999", "--batch-size: 99999999999999999999 is too large a number"},
      {"--epochs 0", "--epochs: must be at least 1, not 0"},
      {"--epochs 2000000", "--epochs: must be at most 1000000, not 2000000"},
      {"--iterations 0", "--iterations: must be at least 1, not 0"},
      {"--iterations -3", "--iterations: must be at least 1, not -3"},
      {"--stop-after 0", "--stop-after: must be at least 1, not 0"},
      {"--trace-iterations -1", "--trace-iterations: must be at least 0, not -1"},
      {"--compress-threads -2", "--compress-threads: must be at least 0, not -2"},
      {"--compress-threads 1000", "--compress-threads: must be at most 256, not 1000"},
      {"--seed -1", "--seed: must be at least 0, not -1"},
      {"--seed 1.5", "--seed: must be a whole number, not 1.5"},
      {"--budget nan", "--budget: the size 'nan' is not a finite number"},
      {"--budget -5MiB", "--budget: the size '-5MiB' is not positive"},
      {"--budget 0", "--budget: the size '0' is not positive"},
      {"--budget 0.4", "--budget: the size '0.4' is less than a byte"},
      {"--budget 99999999999TiB", "--budget: the size '99999999999TiB' does not fit in 64 bits"},
      {"--budget 1e400", "--budget: the size '1e400' is out of range"},
      {"--budget 12XB", "--budget: the size '12XB' cannot be read"},
      {"--screenshot shot.png --frames 0", "--frames: must be at least 1, not 0"},
      {"--window-width 100", "--window-width: must be at least 320, not 100"},
      {"--window-height 99999", "--window-height: must be at most 16384, not 99999"},
  };
  for (const auto& [args, message] : cases)
    expect_error(run_here("--batch --quiet --dataset cifar10 --data /nonexistent/tidepool-data " + args), message);
  // The subcommands' numbers go through the same checks.
  expect_error(run_here("plan --batch-size 0"), "--batch-size: must be at least 1, not 0");
  expect_error(run_here("plan --budget -1GiB"), "--budget: the size '-1GiB' is not positive");
  expect_error(run_here("view /nonexistent/run --window-height 10"), "--window-height: must be at least 240, not 10");
  // And the binary says the same.
  expect_error(run("--batch --quiet --lr nan"), "--lr: must be a finite number, not nan");
  expect_error(run("--batch --quiet --epochs 0"), "--epochs: must be at least 1, not 0");
}

// What a number is checked against is what the option receives: CLI11 on
// its own reads "010" as octal.
TEST(Cli, NumbersAreReadInDecimal) {
  testing::TempDir dir("cli_decimal");
  testing::write_tiny_cifar10(dir.path() / "data");
  const std::string out = (dir.path() / "run").string();
  ASSERT_EQ(run("--batch --quiet --iterations 1 --batch-size 010 --dataset cifar10 --data " +
                (dir.path() / "data").string() + " --out " + out)
                .status,
            0);
  std::ifstream in(dir.path() / "run" / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["batch_size"], 10);
}

// A learning rate of a million: the run stops at the iteration that went
// non-finite, prints where, writes summary.json saying so and exits 1.
TEST(Cli, ADivergedRunSaysWhereWritesItsSummaryAndExitsNonZero) {
  testing::TempDir dir("cli_diverge");
  testing::write_tiny_cifar10(dir.path() / "data");
  const std::string out = (dir.path() / "run").string();
  const Result r = run("--batch --quiet --batch-size 32 --lr 1e6 --dataset cifar10 --data " +
                       (dir.path() / "data").string() + " --out " + out);
  expect_error(r, "training diverged at iteration ");
  EXPECT_NE(r.output.find(" of 10 (epoch 1, learning rate "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("try a lower --lr"), std::string::npos) << r.output;
  std::ifstream in(dir.path() / "run" / "summary.json");
  ASSERT_TRUE(in) << "summary.json is written before the exit";
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["status"], "diverged");
  EXPECT_NE(r.output.find(summary["divergence"].get<std::string>()), std::string::npos) << r.output;
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
