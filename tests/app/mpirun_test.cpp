// Data-parallel runs as users start them: `mpirun -np 2 tidepool --batch`.
// Skipped where this build has no MPI or the machine no mpirun. Open MPI
// refuses to run as root unless told, which CI is.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "app/checkpoint.h"
#include "engine/comm/mpi_communicator.h"
#include "testing/mpirun.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool {
namespace {

namespace fs = std::filesystem;

bool have_mpirun() { return testing::run_command("command -v mpirun").status == 0; }

std::string mpirun(int ranks) {
  return testing::mpirun(ranks) + TIDEPOOL_BINARY;
}

nlohmann::json summary_of(const fs::path& run) {
  std::ifstream in(run / "summary.json");
  return nlohmann::json::parse(in);
}

class Mpirun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!MpiCommunicator::available()) GTEST_SKIP() << "this build has no MPI";
    if (!have_mpirun()) GTEST_SKIP() << "no mpirun on this machine";
    testing::write_tiny_cifar10(dir_.path(), 64, 64);  // 320 training images, 64 test
  }
  std::string args(const fs::path& out, const std::string& more = "", int batch = 32) const {
    return " --batch --quiet --model resnet20 --dataset cifar10 --data " + dir_.path().string() + " --batch-size " +
           std::to_string(batch) + " --seed 7 --out " + out.string() + " " + more;
  }
  testing::TempDir dir_{"mpirun"};
};

TEST_F(Mpirun, TwoRanksTrainTheSameBitsTwiceAndEachWritesItsTrace) {
  const fs::path a = dir_.path() / "a", b = dir_.path() / "b";
  for (const fs::path& run : {a, b}) {
    const auto r = testing::run_command(mpirun(2) + args(run, "--iterations 6 --bucket-size 64KiB"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("data-parallel over 2 ranks (mpi): 16 images per rank"), std::string::npos) << r.output;
  }
  const nlohmann::json sa = summary_of(a), sb = summary_of(b);
  EXPECT_EQ(sa.at("param_checksum"), sb.at("param_checksum"));
  EXPECT_EQ(sa.at("ranks"), 2);
  EXPECT_EQ(sa.at("rank_batch_size"), 16);
  ASSERT_EQ(sa.at("per_rank").size(), 2u);
  EXPECT_GT(sa.at("per_rank")[1].at("peak_load_bytes").get<double>(), 0);
  EXPECT_GT(sa.at("per_rank")[1].at("images_per_second").get<double>(), 0);
  // Rank 1's own traced files beside rank 0's; the run's files once.
  for (const char* f : {"trace.json", "trace.rank1.json", "memory_load.rank1.csv", "events.rank1.bin", "metrics.csv"})
    EXPECT_TRUE(fs::exists(a / f)) << f;
  EXPECT_FALSE(fs::exists(a / "metrics.rank1.csv"));
  std::ifstream trace(a / "trace.rank1.json");
  const std::string text((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("comm (all-reduce)"), std::string::npos);
  EXPECT_NE(text.find("\"all_reduce\""), std::string::npos) << "the all-reduces are on the comm track";

  // The global batch's order does not depend on the ranks: the run
  // continues on one process.
  const auto alone = testing::run_command(std::string(TIDEPOOL_BINARY) + " --batch --quiet --resume " + a.string() +
                                          " --iterations 8");
  ASSERT_EQ(alone.status, 0) << alone.output;
  const nlohmann::json continued = summary_of(a);
  EXPECT_EQ(continued.at("iterations"), 8);
  EXPECT_EQ(continued.at("ranks"), 1);
}

// The ranks of a normal run end holding one model: each rank's own
// checksum of its parameters (per_rank, gathered from every rank as it
// ends) is rank 0's, and is the run's.
TEST_F(Mpirun, TheRanksEndWithTheSameParameters) {
  const fs::path run = dir_.path() / "agree";
  const auto r = testing::run_command(mpirun(2) + args(run, "--iterations 6 --checkpoint-every 2"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json s = summary_of(run);
  ASSERT_EQ(s.at("per_rank").size(), 2u);
  EXPECT_EQ(s.at("per_rank")[0].at("param_checksum"), s.at("param_checksum"));
  EXPECT_EQ(s.at("per_rank")[1].at("param_checksum"), s.at("per_rank")[0].at("param_checksum"))
      << "rank 1's parameters are not rank 0's";
}

// One rank's parameters moved by one bit (the test hook
// TIDEPOOL_TEST_PERTURB_RANK, app/test_hooks.h, after its first iteration):
// the run stops at its next check of the ranks, names the rank, and
// writes no summary of a run that no longer trains one model.
TEST_F(Mpirun, ARankWhoseParametersDifferStopsTheRunNamingIt) {
  const fs::path run = dir_.path() / "perturbed";
  const auto r = testing::run_command(testing::mpirun(2) + "-x TIDEPOOL_TEST_PERTURB_RANK=1 " + TIDEPOOL_BINARY +
                                      args(run, "--iterations 6 --checkpoint-every 2"));
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1 moved its first parameter"), std::string::npos)
      << "the hook acted on rank 1:\n" << r.output;
  EXPECT_NE(r.output.find("after iteration 2 the parameters of rank 1 differ from rank 0's"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(run / "summary.json"));
}

// --sync-bn: the ranks normalise over the global batch (every batch
// norm's sums all-reduced on the comm track), finish agreeing (the run
// compares their checksums at the end), say so and record it; the model
// differs from the one each rank's own statistics train.
TEST_F(Mpirun, SyncBnRanksTrainOneModelAndSaySo) {
  const fs::path synced = dir_.path() / "synced", each = dir_.path() / "each";
  const auto r = testing::run_command(mpirun(2) + args(synced, "--iterations 4 --sync-bn"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("batch norm normalises over the whole global batch (--sync-bn)"), std::string::npos)
      << r.output;
  const auto plain = testing::run_command(mpirun(2) + args(each, "--iterations 4"));
  ASSERT_EQ(plain.status, 0) << plain.output;
  const nlohmann::json s = summary_of(synced);
  EXPECT_EQ(s.at("sync_bn"), true);
  EXPECT_EQ(s.at("settings").at("sync_bn"), true);
  EXPECT_EQ(summary_of(each).at("sync_bn"), false);
  EXPECT_NE(s.at("param_checksum"), summary_of(each).at("param_checksum"));
  std::ifstream trace(synced / "trace.rank1.json");
  const std::string text((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("bn1.grad_sums"), std::string::npos) << "rank 1's trace shows the sums' all-reduces";
}

TEST_F(Mpirun, RefusesAGlobalBatchThatDoesNotSplitEvenly) {
  const auto r = testing::run_command(mpirun(2) + args(dir_.path() / "odd", "--iterations 1", 33));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--batch-size 33 is the global batch and does not split evenly over 2 ranks: give a "
                          "multiple of 2 (32 or 34)"),
            std::string::npos)
      << r.output;
}

// The window under mpirun (tests/gui has it drawn): a rank that is not
// there is refused on every rank before anything starts.
TEST_F(Mpirun, TheWindowRefusesToShowARankTheRunDoesNotHave) {
  const auto r = testing::run_command(mpirun(2) + " --model resnet20 --dataset cifar10 --data " +
                                      dir_.path().string() + " --batch-size 32 --show-rank 2 --screenshot x.png");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--show-rank 2: the run's ranks are 0 to 1"), std::string::npos) << r.output;
}

// A rank killed mid-run: mpirun stops the other (it must not wait for the
// dead one forever), says which rank died, and the last checkpoint is
// whole: the run resumes from it on two ranks.
TEST_F(Mpirun, ARankThatDiesStopsTheOthersAndTheCheckpointStaysGood) {
  const fs::path run = dir_.path() / "killed";
  const fs::path log = dir_.path() / "killed.log";
  const std::string command =
      mpirun(2) + args(run, "--iterations 100000 --checkpoint-every 2") + " > " + log.string() + " 2>&1";
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Rank 1: the tidepool process whose command line names this run and
  // whose environment says rank 1.
  auto rank1 = [&]() -> pid_t {
    for (const auto& p : fs::directory_iterator("/proc")) {
      const std::string name = p.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream cmd(p.path() / "cmdline"), env(p.path() / "environ");
      const std::string c((std::istreambuf_iterator<char>(cmd)), {}), e((std::istreambuf_iterator<char>(env)), {});
      if (c.find(run.string()) != std::string::npos && c.rfind("mpirun", 0) != 0 &&
          e.find(std::string("OMPI_COMM_WORLD_RANK=1") + '\0') != std::string::npos)
        return static_cast<pid_t>(std::stol(name));
    }
    return -1;
  };
  auto log_text = [&] {
    std::ifstream in(log);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  // Until rank 1 runs and the first checkpoint is written: the state the
  // test waits for, however long a busy machine takes to get there. A
  // launcher that ends first failed the run (its log says why).
  int status = 0;
  pid_t victim = -1;
  while (victim < 0 || !fs::exists(run / "checkpoint.bin")) {
    ASSERT_EQ(waitpid(launcher, &status, WNOHANG), 0) << "the run ended before its first checkpoint:\n" << log_text();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // how often to look, not a bound
    if (victim < 0) victim = rank1();
  }
  ::kill(victim, SIGKILL);
  // The launcher must end on its own: rank 0 alone waits for rank 1's
  // gradients forever unless mpirun stops it. The limit is a hang guard,
  // far past any teardown, not a claim of speed: what fails the test is a
  // launcher that does not end at all; and a test that waited forever
  // would leave rank 0 training after ctest gave up on it.
  constexpr auto kHangGuard = std::chrono::minutes(5);
  pid_t done = 0;
  const auto stop_by = std::chrono::steady_clock::now() + kHangGuard;
  while ((done = waitpid(launcher, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < stop_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) {
    ::kill(launcher, SIGKILL);
    waitpid(launcher, &status, 0);
    FAIL() << "mpirun did not end after rank 1 died";
  }
  const std::string output = log_text();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << output;
  EXPECT_NE(output.find("rank 1"), std::string::npos) << "the message names the rank that died:\n" << output;

  const app::Checkpoint c = app::load_checkpoint(run / "checkpoint.bin");  // whole: it parses
  EXPECT_GE(c.iteration, 2);
  const auto resumed = testing::run_command(mpirun(2) + " --batch --quiet --resume " + run.string() + " --iterations " +
                                            std::to_string(c.iteration + 2));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_EQ(summary_of(run).at("status"), "done");
}

}  // namespace
}  // namespace tidepool
