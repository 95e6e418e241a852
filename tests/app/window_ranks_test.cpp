// The window on a data-parallel run, without the window: rank 0's
// SessionRunner (what the window drives) and rank 1 following its turns,
// as threads of one process (LocalGroup). Both ranks train the iterations
// the window steps, apply the memory settings it asks for at the same
// boundary, agree on their parameters at the epoch's end, start over
// together and stop together; rank 1's events reach rank 0's link.
#include "app/window_ranks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <thread>

#include "app/session_runner.h"
#include "engine/comm/local_group.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool::app {
namespace {

RunSettings tiny(const std::filesystem::path& data) {
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "cifar10";
  o.data_dir = data.string();
  o.batch_size = 32;  // 16 per rank; 10 iterations an epoch
  o.iterations = 10;
  o.progress = false;
  return o;
}

// Waits until `done()` holds, looking every 10 ms: these tests wait for
// what the runner recorded, never for a time (a run that hangs is failed
// by ctest's timeout).
template <typename Done>
void wait_until(Done done) {
  while (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// Waits until rank `rank`'s events on the link hold `n` iterations.
void wait_for_events(const ui::SessionLink& link, int rank, std::size_t n) {
  wait_until([&] { return link.events(rank).iterations.size() >= n; });
}

// Whether the run ended, well or not (the test then says which).
bool ended(const SessionRunner& runner) {
  const ui::RunState state = runner.status().state;
  return state == ui::RunState::finished || state == ui::RunState::failed || state == ui::RunState::diverged;
}

// Rank 1, following on a thread; its exception, if any, kept for the test.
struct Follower {
  Follower(const RunSettings& s, Communicator& comm)
      : thread([this, s, &comm] {
          try {
            follow_window(s, comm);
          } catch (...) {
            error = std::current_exception();
          }
        }) {}
  std::exception_ptr error;
  std::jthread thread;
};

TEST(WindowRanks, RankOneTrainsWhatTheWindowStepsAndAppliesWhatItAsks) {
  testing::TempDir dir("window-ranks");
  testing::write_tiny_cifar10(dir.path());
  const RunSettings settings = tiny(dir.path());
  LocalGroup group(2);
  SessionRunner runner(settings, kWindowRing, &group.rank(0));
  Follower follower(settings, group.rank(1));
  EXPECT_EQ(runner.event_ranks(), (std::vector<int>{0, 1}));

  runner.start(/*paused=*/true);
  runner.step();
  runner.wait_for_iterations(1);
  wait_for_events(runner, 1, 1);  // rank 1 trained the iteration and forwarded its events
  const IterationSummary base = runner.events(1).iterations.back();
  EXPECT_EQ(base.iteration, 0);
  EXPECT_EQ(base.peak_load_bytes, runner.events(0).iterations.back().peak_load_bytes) << "one plan on both ranks";

  // Every activation offloaded: rank 1 re-plans at the same boundary.
  MemorySettings all = runner.status().settings.memory;
  all.mode = OffloadMode::all;
  runner.request(all);
  runner.step();
  runner.wait_for_iterations(2);
  ASSERT_FALSE(runner.status().refused) << runner.status().message;
  wait_for_events(runner, 1, 2);
  const IterationSummary offloaded = runner.events(1).iterations.back();
  EXPECT_EQ(offloaded.iteration, 1);
  EXPECT_LT(offloaded.peak_load_bytes, base.peak_load_bytes) << "rank 1 offloads too";
  EXPECT_EQ(offloaded.peak_load_bytes, runner.events(0).iterations.back().peak_load_bytes);

  // On to the end: the epoch ends at iteration 10, where both ranks
  // compare parameter checksums (a mismatch would fail the run).
  runner.resume();
  runner.wait_for_iterations(10);
  wait_until([&] { return ended(runner); });
  EXPECT_EQ(runner.status().state, ui::RunState::finished) << runner.status().error;
  EXPECT_GE(runner.status().test_accuracy, 0) << "evaluated over both ranks' shards";

  EXPECT_TRUE(runner.stop()) << "rank 1 stopped and said so";
  follower.thread.join();
  EXPECT_FALSE(follower.error);
}

TEST(WindowRanks, BothRanksStartOverTogether) {
  testing::TempDir dir("window-ranks");
  testing::write_tiny_cifar10(dir.path());
  RunSettings settings = tiny(dir.path());
  settings.iterations = 2;
  LocalGroup group(2);
  SessionRunner runner(settings, kWindowRing, &group.rank(0));
  Follower follower(settings, group.rank(1));
  runner.start();
  runner.wait_for_iterations(2);
  wait_for_events(runner, 1, 2);

  RunSettings again = settings;
  again.iterations = 3;
  again.memory.mode = OffloadMode::all;
  runner.restart(again);
  runner.wait_for_iterations(5);
  wait_until([&] { return ended(runner); });
  wait_for_events(runner, 1, 3);
  const RingSnapshot rank1 = runner.events(1);
  EXPECT_EQ(rank1.iterations.size(), 3u) << "the first session's iterations were cleared";
  EXPECT_EQ(rank1.iterations.front().iteration, 0);
  EXPECT_EQ(runner.status().state, ui::RunState::finished) << runner.status().error;
  EXPECT_TRUE(runner.stop());
  follower.thread.join();
  EXPECT_FALSE(follower.error);
}

}  // namespace
}  // namespace tidepool::app
