// The real `tidepool --batch` killed with SIGKILL again and again, at random
// moments and in the middle of checkpoint writes, and resumed each time: it
// must end with the parameters and the metrics rows of an uninterrupted run,
// and a folder `tidepool view` opens.
//
// How a kill lands inside a checkpoint write without depending on timing:
// TIDEPOOL_TEST_CHECKPOINT_STALL=N makes the process's N-th checkpoint save
// write half of checkpoint.bin.tmp, say so on stderr and sleep
// (app/checkpoint.h); the test waits for those words and kills the process
// then. The random
// moments are drawn from a seed that is printed (TIDEPOOL_KILL_SEED=S
// repeats a run); wherever a kill lands, the assertions must hold.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/checkpoint.h"
#include "app/recorded_run.h"
#include "testing/metrics_csv.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

extern char** environ;

namespace tidepool::app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One tidepool process, its output in `log`.
class Process {
 public:
  Process(const std::vector<std::string>& args, const fs::path& log, const std::string& stall = "") {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
      if (std::string(*e).rfind("TIDEPOOL_TEST_CHECKPOINT_STALL=", 0) != 0) env.emplace_back(*e);
    env.push_back("OMP_NUM_THREADS=1");
    if (!stall.empty()) env.push_back("TIDEPOOL_TEST_CHECKPOINT_STALL=" + stall);
    std::vector<std::string> argv{TIDEPOOL_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    auto pointers = [](std::vector<std::string>& strings) {
      std::vector<char*> p;
      for (auto& s : strings) p.push_back(s.data());
      p.push_back(nullptr);
      return p;
    };
    auto argp = pointers(argv), envp = pointers(env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int err = posix_spawn(&pid_, argp[0], &actions, nullptr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) throw std::runtime_error("cannot start " + argv[0]);
  }
  ~Process() {
    if (pid_ > 0) kill_now();
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Whether it has ended; its exit status then in `status`.
  bool ended() {
    if (pid_ <= 0) return true;
    int raw = 0;
    if (::waitpid(pid_, &raw, WNOHANG) != pid_) return false;
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    pid_ = -1;
    return true;
  }
  int wait() {
    while (!ended()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return status_;
  }
  // SIGKILL unless it has ended; true when the kill landed.
  bool kill_now() {
    if (ended()) return false;
    ::kill(pid_, SIGKILL);
    int raw = 0;
    ::waitpid(pid_, &raw, 0);
    pid_ = -1;
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return WIFSIGNALED(raw);
  }
  int status() const { return status_; }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

std::string text_of(const fs::path& f) {
  std::ifstream in(f);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string param_checksum(const fs::path& run) {
  return nlohmann::json::parse(text_of(run / "summary.json")).at("param_checksum").get<std::string>();
}

class KillResume : public ::testing::Test {
 protected:
  KillResume() : dir_("kill") {
    // 80 training images at batch 8: 10 iterations an epoch, 30 in the run;
    // checkpoints at iterations 3, 6, 9, 10, 12, ... (a checkpoint's place
    // is counted from the run's start).
    testing::write_tiny_cifar10(dir_ / "data", 16, 16);
  }
  std::vector<std::string> fresh(const fs::path& out, const std::string& every) const {
    return {"--batch", "--quiet", "--model", "resnet20", "--dataset", "cifar10", "--data", (dir_ / "data").string(),
            "--batch-size", "8", "--epochs", "3", "--seed", "7", "--checkpoint-every", every, "--out", out.string()};
  }
  std::vector<std::string> resume(const fs::path& out) const {
    return {"--batch", "--quiet", "--resume", out.string(), "--checkpoint-every", "3"};
  }
  // The command that carries `out` on: resume when it has a checkpoint.
  std::vector<std::string> next_command(const fs::path& out) const {
    return fs::exists(out / "checkpoint.bin") ? resume(out) : fresh(out, "3");
  }

  testing::TempDir dir_;
};

TEST_F(KillResume, KilledAnywhereAndResumedEndsAsAnUninterruptedRun) {
  int processes = 0;
  auto next_log = [&] { return dir_ / ("log" + std::to_string(processes++) + ".txt"); };
  fs::path log = next_log();
  // The uninterrupted run, with no checkpoint inside an epoch: where
  // checkpoints are taken must not change a bit either.
  const auto t0 = Clock::now();
  {
    Process whole(fresh(dir_ / "whole", "0"), log);
    ASSERT_EQ(whole.wait(), 0) << text_of(log);
  }
  const auto whole_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  const std::string expected = param_checksum(dir_ / "whole");
  const std::vector<std::string> expected_rows = testing::metrics_rows_without_times(dir_ / "whole");
  ASSERT_EQ(expected_rows.size(), 3u);

  std::uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("TIDEPOOL_KILL_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::printf("kill seed %llu (TIDEPOOL_KILL_SEED=%llu repeats these kill moments)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  RecordProperty("kill_seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  const fs::path run = dir_ / "killed";

  // Kill inside a checkpoint write: the process's N-th save stalls half
  // written and says so; we kill when we read that. False when the run
  // ended before its N-th save.
  auto kill_in_checkpoint = [&](int n) {
    log = next_log();
    Process p(next_command(run), log, std::to_string(n));
    // Until it says it stalls (it then sleeps until killed) or it ended
    // first: what it did, however long a busy machine takes to get there.
    while (text_of(log).find("checkpoint save stalls half written") == std::string::npos && !p.ended())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // how often to look, not a bound
    const bool killed = p.kill_now();
    if (!killed) return false;
    EXPECT_NE(text_of(log).find("stalls half written"), std::string::npos) << "killed before the stall";
    // The torn temporary file is there and is refused; checkpoint.bin is the previous one, whole.
    EXPECT_TRUE(fs::exists(run / "checkpoint.bin.tmp"));
    EXPECT_THROW(load_checkpoint(run / "checkpoint.bin.tmp"), CheckpointError);
    return true;
  };

  // 1. From the start, the 4th save is epoch 1's end (iteration 10): its
  // metrics row is written, its checkpoint is not; the resume must rewind
  // metrics.csv to the checkpoint at iteration 9 and write the row again.
  ASSERT_TRUE(kill_in_checkpoint(4)) << text_of(log);
  {
    const Checkpoint c = load_checkpoint(run / "checkpoint.bin");
    EXPECT_EQ(c.iteration, 9);
    EXPECT_EQ(c.batch_in_epoch, 9);
    EXPECT_GT(c.epoch_so_far.images, 0);
    EXPECT_EQ(testing::metrics_rows_without_times(run).size(), 1u) << "epoch 1's row, ahead of its checkpoint";
  }

  // 2. Kills at random moments of an invocation's life, start-up included
  // (up to a third of the uninterrupted run's time, so that several land
  // before the run ends), and one more inside a random save.
  bool finished = false;
  for (int round = 0; round < 7 && !finished; ++round) {
    const std::int64_t before = load_checkpoint(run / "checkpoint.bin").iteration;
    if (round == 3) {
      const int n = std::uniform_int_distribution<int>(1, 3)(rng);
      std::printf("round %d: kill inside save %d\n", round, n);
      kill_in_checkpoint(n);
    } else {
      const auto delay = std::uniform_int_distribution<long>(0, whole_ms / 3)(rng);
      log = next_log();
      Process p(next_command(run), log);
      const auto until = Clock::now() + std::chrono::milliseconds(delay);
      while (!p.ended() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const bool killed = p.kill_now();
      std::printf("round %d: %s after %ld ms\n", round, killed ? "killed" : "ended", delay);
      if (!killed) {
        ASSERT_EQ(p.status(), 0) << text_of(log);
        finished = true;
      }
    }
    // Whatever the moment, the checkpoint is whole and never goes back.
    const Checkpoint c = load_checkpoint(run / "checkpoint.bin");
    EXPECT_GE(c.iteration, before);
    std::printf("  checkpoint at iteration %lld\n", static_cast<long long>(c.iteration));
  }

  // 3. The rest, uninterrupted.
  if (!finished) {
    log = next_log();
    Process last(resume(run), log);
    ASSERT_EQ(last.wait(), 0) << text_of(log);
  }
  EXPECT_EQ(param_checksum(run), expected);
  EXPECT_EQ(testing::metrics_rows_without_times(run), expected_rows) << "one row per epoch, each the uninterrupted run's";
  EXPECT_FALSE(fs::exists(run / "checkpoint.bin.tmp"));
  EXPECT_NO_THROW(RecordedRun{run}) << "the traced files are whole";
}

}  // namespace
}  // namespace tidepool::app
