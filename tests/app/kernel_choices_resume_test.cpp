// Kernels chosen by timing, through a whole run: the choices go into the
// checkpoint and the machine's record, a resumed run adopts the
// checkpoint's before it plans (over the machine's) and times nothing, and
// a new run adopts the machine's. The device is a cpu device that chooses
// by a fake table of timings (testing/timing_device.h), the rules the cuda
// device's `p` convolutions choose by.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/batch_run.h"
#include "app/checkpoint.h"
#include "app/kernel_choices_file.h"
#include "app/session.h"
#include "engine/comm/local_group.h"
#include "testing/temp_dir.h"
#include "testing/timing_device.h"
#include "testing/tiny_datasets.h"

namespace tidepool::app {
namespace {

using testing::FakeTimings;
using testing::TimingDevice;
using testing::TimingLog;

// A process's timings: one algorithm per shape clearly the fastest, which
// one depending on the shape and on `process`, so two processes choose
// differently for every shape unless one adopts the other's choices.
int fastest_in(int process, const std::string& shape) {
  return static_cast<int>((std::hash<std::string>{}(shape) + static_cast<std::size_t>(process)) %
                          testing::kFakeAlgorithms);
}
FakeTimings timings_of(int process) {
  return [process](const std::string& shape, int algo, int search) {
    return algo == fastest_in(process, shape) ? 1.0f : 2.0f + 0.01f * static_cast<float>(search);
  };
}
std::vector<std::string> choices_of(int process, std::vector<std::string> shapes) {
  std::sort(shapes.begin(), shapes.end());
  std::vector<std::string> lines;
  for (const std::string& shape : shapes)
    lines.push_back(kernel_choice_line(shape, std::to_string(fastest_in(process, shape)) + " fma"));
  return lines;
}
std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// $XDG_CACHE_HOME, where the machine's record lives, pointed into a test's
// folder and put back after.
class CacheHome {
 public:
  explicit CacheHome(const std::filesystem::path& dir) {
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_ = old, had_ = true;
    ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  }
  ~CacheHome() {
    if (had_)
      ::setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    else
      ::unsetenv("XDG_CACHE_HOME");
  }

 private:
  std::string old_;
  bool had_ = false;
};

RunSettings tiny_run(const std::filesystem::path& data, const std::filesystem::path& out) {
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "cifar10";
  o.data_dir = data.string();
  o.batch_size = 32;
  o.iterations = 4;
  o.out = out.string();
  o.progress = false;
  return o;
}

std::function<std::unique_ptr<Device>()> device_of(int process, const std::shared_ptr<TimingLog>& log) {
  return [process, log] { return std::make_unique<TimingDevice>(timings_of(process), log); };
}

TEST(KernelChoicesOnResume, TheCheckpointsChoicesAreAdoptedOverTheMachinesAndNothingIsTimedAgain) {
  testing::TempDir dir("choices");
  CacheHome cache(dir.path() / "cache");
  testing::write_tiny_cifar10(dir.path() / "data");
  const auto folder = dir.path() / "run";

  // Process 0 trains half the run and stops.
  auto first = std::make_shared<TimingLog>();
  RunSettings half = tiny_run(dir.path() / "data", folder);
  half.stop_after = 2;
  run_batch(half, std::nullopt, nullptr, nullptr, nullptr, device_of(0, first));
  ASSERT_FALSE(first->timed.empty()) << "the fake device timed no convolution";
  EXPECT_TRUE(first->adopted.empty()) << "nothing was recorded before the first run";
  const std::vector<std::string> chosen = choices_of(0, first->timed);
  const Checkpoint stopped = load_checkpoint(folder / "checkpoint.bin");
  EXPECT_EQ(stopped.kernel_choices, chosen) << "the checkpoint keeps every timed choice";
  const auto machine = kernel_choices_file(TimingDevice(timings_of(0), first).caps().name);
  EXPECT_EQ(read_kernel_choices(machine), chosen) << "so does the machine's record";

  // Since then the machine has timed these shapes otherwise (process 2).
  // The resumed run, in process 1, would time yet other choices: it must
  // run the checkpoint's.
  remember_kernel_choices(machine, choices_of(2, first->timed));
  ASSERT_NE(choices_of(2, first->timed), chosen);
  ASSERT_NE(choices_of(1, first->timed), chosen);
  auto resumed = std::make_shared<TimingLog>();
  RunSettings cli;
  cli.progress = false;
  const auto summary = run_batch(resume_settings(cli, {}, stopped, folder.string()), stopped, nullptr, nullptr,
                                 nullptr, device_of(1, resumed));
  EXPECT_EQ(summary["iterations"], 4);
  EXPECT_TRUE(resumed->timed.empty()) << "the resumed run timed " << resumed->timed.size() << " shapes again";
  EXPECT_EQ(sorted(resumed->adopted), sorted(first->timed));
  EXPECT_EQ(load_checkpoint(folder / "checkpoint.bin").kernel_choices, chosen)
      << "the finished run's checkpoint keeps the choices it ran";
}

TEST(KernelChoicesOnResume, ANewRunAdoptsTheMachinesChoicesAndWithoutThemTimesItsOwn) {
  testing::TempDir dir("choices");
  CacheHome cache(dir.path() / "cache");
  testing::write_tiny_cifar10(dir.path() / "data");

  auto first = std::make_shared<TimingLog>();
  run_batch(tiny_run(dir.path() / "data", dir.path() / "first"), std::nullopt, nullptr, nullptr, nullptr,
            device_of(0, first));
  ASSERT_FALSE(first->timed.empty());

  // Another process on the same machine: the machine's record decides.
  auto second = std::make_shared<TimingLog>();
  run_batch(tiny_run(dir.path() / "data", dir.path() / "second"), std::nullopt, nullptr, nullptr, nullptr,
            device_of(1, second));
  EXPECT_TRUE(second->timed.empty());
  EXPECT_EQ(load_checkpoint(dir.path() / "second" / "checkpoint.bin").kernel_choices, choices_of(0, first->timed));

  // On a machine without a record, that process times, and chooses
  // otherwise: what the runs above adopted was not what they would time.
  CacheHome elsewhere(dir.path() / "other-cache");
  auto third = std::make_shared<TimingLog>();
  run_batch(tiny_run(dir.path() / "data", dir.path() / "third"), std::nullopt, nullptr, nullptr, nullptr,
            device_of(1, third));
  EXPECT_EQ(sorted(third->timed), sorted(first->timed));
  EXPECT_EQ(load_checkpoint(dir.path() / "third" / "checkpoint.bin").kernel_choices, choices_of(1, first->timed));
}

// Two ranks whose timings differ run rank 0's choices: rank 0 times, and
// rank 1 adopts what it sends before planning anything of its own.
TEST(KernelChoicesOnRanks, EveryRankRunsRankZerosChoices) {
  testing::TempDir dir("choices");
  CacheHome cache(dir.path() / "cache");
  testing::write_tiny_cifar10(dir.path() / "data");
  LocalGroup group(2);
  std::shared_ptr<TimingLog> logs[2] = {std::make_shared<TimingLog>(), std::make_shared<TimingLog>()};
  std::vector<std::string> ran[2];
  auto rank = [&](int r) {
    RunSettings s = tiny_run(dir.path() / "data", {});
    s.out.clear();
    TrainingSession session(s, {.comm = &group.rank(r), .make_device = device_of(r, logs[r])});
    session.start(nullptr);
    session.train_iteration();
    ran[r] = session.device().kernel_choices();
  };
  std::jthread other(rank, 1);
  rank(0);
  other.join();
  ASSERT_FALSE(logs[0]->timed.empty());
  EXPECT_TRUE(logs[1]->timed.empty()) << "rank 1 timed " << logs[1]->timed.size() << " shapes itself";
  EXPECT_EQ(ran[0], choices_of(0, logs[0]->timed));
  EXPECT_EQ(ran[1], ran[0]);
}

}  // namespace
}  // namespace tidepool::app
