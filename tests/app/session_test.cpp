// The settings path the window uses: requests from another thread, applied
// by the session at the next iteration boundary, refused with the reason
// (and the smallest workable budget) while training goes on unchanged.
#include <gtest/gtest.h>

#include <cmath>

#include "app/session.h"
#include "app/session_runner.h"
#include "app/settings_text.h"
#include "tiny_cifar.h"

namespace tidepool::app {
namespace {

RunOptions tiny(const std::filesystem::path& data) {
  RunOptions o;
  o.model = "resnet20";
  o.dataset = "cifar10";
  o.data_dir = data.string();
  o.batch_size = 32;  // 320 training images: 10 iterations per epoch
  o.lr = 0.05f;
  o.progress = false;
  return o;
}

TEST(Session, BudgetRequestTakesEffectAtTheNextIteration) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  TrainingSession session(tiny(dir.path()), {.roomy_arena = true});
  RingSink ring;
  session.start(&ring);
  session.train_iteration();
  const ui::SessionStatus before = session.status();
  ASSERT_GT(before.arena_bytes, before.pool_bytes) << "a roomy arena leaves the budget room to grow";

  ui::MemorySettings wanted = before.settings;
  wanted.budget_bytes = before.minimum_budget + (before.arena_bytes - before.minimum_budget) / 2;
  session.request(wanted);
  EXPECT_EQ(session.status().pool_bytes, before.pool_bytes) << "nothing changes between iterations";
  const StepReport r = session.train_iteration();
  EXPECT_TRUE(r.settings_changed);
  const ui::SessionStatus after = session.status();
  EXPECT_EQ(after.pool_bytes, wanted.budget_bytes);
  EXPECT_EQ(after.settings.budget_bytes, wanted.budget_bytes);
  EXPECT_FALSE(after.refused) << after.message;
  EXPECT_EQ(after.requests, 1u);
  EXPECT_EQ(after.iteration, 2);
  EXPECT_LE(ring.snapshot().iterations.back().footprint_bytes, wanted.budget_bytes);
}

TEST(Session, ImpossibleBudgetIsRefusedWithTheMinimumAndTrainingContinues) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  TrainingSession session(tiny(dir.path()), {.roomy_arena = true});
  session.start(nullptr);
  session.train_iteration();
  const ui::SessionStatus before = session.status();
  ui::MemorySettings impossible = before.settings;
  impossible.budget_bytes = before.minimum_budget / 2;
  session.request(impossible);
  const StepReport r = session.train_iteration();
  EXPECT_FALSE(r.settings_changed);
  EXPECT_TRUE(std::isfinite(r.result.loss));
  const ui::SessionStatus after = session.status();
  EXPECT_TRUE(after.refused);
  EXPECT_NE(after.message.find("too small"), std::string::npos) << after.message;
  EXPECT_NE(after.message.find("smallest budget that works is " + format_bytes(before.minimum_budget)),
            std::string::npos)
      << after.message;
  EXPECT_EQ(after.pool_bytes, before.pool_bytes);
  EXPECT_EQ(after.settings, before.settings);
  EXPECT_EQ(after.iteration, 2) << "the refused request did not stop training";

  // A budget above the arena reserved at start is refused too.
  impossible.budget_bytes = before.arena_bytes + (1 << 20);
  session.request(impossible);
  session.train_iteration();
  EXPECT_TRUE(session.status().refused);
  EXPECT_NE(session.status().message.find("exceeds"), std::string::npos) << session.status().message;
}

TEST(Session, LookaheadRequestReplansThePrefetches) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  TrainingSession session(tiny(dir.path()), {.roomy_arena = true});
  session.start(nullptr);
  session.train_iteration();
  ui::MemorySettings s = session.status().settings;
  EXPECT_EQ(s.lookahead, 1) << "the command line's --lookahead";
  s.mode = OffloadMode::all;
  s.lookahead = 3;
  session.request(s);
  session.train_iteration();
  EXPECT_FALSE(session.status().refused) << session.status().message;
  EXPECT_EQ(session.status().settings.lookahead, 3);
  EXPECT_EQ(session.trainer().options().plan.lookahead, 3);
  s.lookahead = -1;
  session.request(s);
  session.train_iteration();
  EXPECT_TRUE(session.status().refused);
  EXPECT_EQ(session.trainer().options().plan.lookahead, 3) << "a refused request changes nothing";
}

// Async offloads in the least pool park few freed blocks, or none; the
// status names a pool that parks more, asking for it parks more, and so on
// until every block stays parked until needed.
TEST(Session, TheParkingBudgetFromTheStatusParksOffloadedBlocks) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  RunOptions o = tiny(dir.path());
  o.model = "vdnn_constructed";  // its least pool cannot keep every freed block parked
  o.mode = "all";
  TrainingSession session(o, {.roomy_arena = true});
  session.start(nullptr);
  session.train_iteration();
  ui::SessionStatus now = session.status();
  ASSERT_NE(now.park_horizon, kParkUntilNeeded) << "the least pool cannot keep every freed block parked";
  ui::MemorySettings roomy = now.settings;
  int raises = 0;
  while (now.parking_budget != 0 && raises < 5) {
    EXPECT_GT(now.parking_budget, now.pool_bytes);
    EXPECT_LE(now.parking_budget, now.arena_bytes);
    roomy.budget_bytes = now.parking_budget;
    session.request(roomy);
    session.train_iteration();
    const ui::SessionStatus after = session.status();
    EXPECT_FALSE(after.refused) << after.message;
    EXPECT_EQ(after.pool_bytes, roomy.budget_bytes);
    EXPECT_GT(after.park_horizon, now.park_horizon) << "the named pool parks more";
    now = after;
    ++raises;
  }
  EXPECT_GT(raises, 0);
  EXPECT_EQ(now.park_horizon, kParkUntilNeeded);

  roomy.transfer = TransferMode::sync;  // sync transfers never park
  session.request(roomy);
  session.train_iteration();
  EXPECT_FALSE(session.status().parks_offloads());
  EXPECT_EQ(session.status().parking_budget, 0u);
}

TEST(Session, SettingsChangedMidRunKeepTheNumbers) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  auto checksum = [&](bool switch_settings) {
    TrainingSession session(tiny(dir.path()), {.roomy_arena = true});
    session.start(nullptr);
    for (int i = 0; i < 4; ++i) {
      if (switch_settings && i == 1) {
        ui::MemorySettings s = session.status().settings;
        s.mode = OffloadMode::all;
        s.heuristic = "high-end";
        s.transfer = TransferMode::sync;
        session.request(s);
      }
      if (switch_settings && i == 3) {
        ui::MemorySettings s = session.status().settings;
        s.mode = OffloadMode::conv;
        s.heuristic = "smartpool";
        s.link_gbps = 5;
        session.request(s);
      }
      session.train_iteration();
    }
    EXPECT_FALSE(session.status().refused) << session.status().message;
    return session.trainer().param_checksum();
  };
  EXPECT_EQ(checksum(false), checksum(true));
}

TEST(SessionRunner, RequestsFromTheUiThreadApplyAtIterationBoundaries) {
  testing::TempDir dir("runner");
  testing::write_tiny_cifar10(dir.path());
  SessionRunner runner(tiny(dir.path()));
  runner.start(/*paused=*/true);
  runner.step();
  ASSERT_TRUE(runner.wait_for_iterations(1, 120));
  ui::SessionStatus s = runner.status();
  ASSERT_EQ(s.state, ui::RunState::paused) << s.error;
  EXPECT_EQ(s.iteration, 1);
  EXPECT_FALSE(runner.events().iterations.empty()) << "the UI sees the iteration's events";

  // A workable budget: applied before the next iteration.
  ui::MemorySettings wanted = s.settings;
  wanted.budget_bytes = s.minimum_budget + (s.arena_bytes - s.minimum_budget) / 4;
  runner.request(wanted);
  runner.step();
  ASSERT_TRUE(runner.wait_for_iterations(2, 120));
  s = runner.status();
  EXPECT_EQ(s.iteration, 2);
  EXPECT_EQ(s.pool_bytes, wanted.budget_bytes);
  EXPECT_FALSE(s.refused) << s.message;

  // An impossible one: refused, and the next iteration still trains.
  ui::MemorySettings impossible = s.settings;
  impossible.budget_bytes = s.minimum_budget / 3;
  runner.request(impossible);
  runner.step();
  ASSERT_TRUE(runner.wait_for_iterations(3, 120));
  s = runner.status();
  EXPECT_EQ(s.iteration, 3);
  EXPECT_TRUE(s.refused);
  EXPECT_EQ(s.pool_bytes, wanted.budget_bytes);
  EXPECT_EQ(runner.events().iterations.back().iteration, 2) << "iterations 0, 1 and 2 were trained";

  // Resumed, it trains on without being stepped; pausing again holds it.
  runner.resume();
  ASSERT_TRUE(runner.wait_for_iterations(5, 120));
  runner.pause();
  runner.stop();
  EXPECT_GE(runner.status().iteration, 5);
}

TEST(SessionRunner, RestartsWithAnotherModelAndReportsFailures) {
  testing::TempDir dir("runner");
  testing::write_tiny_cifar10(dir.path());
  SessionRunner runner(tiny(dir.path()));
  runner.start(/*paused=*/true);
  ui::MemorySettings s;
  s.mode = OffloadMode::all;
  s.transfer = TransferMode::sync;
  s.link_gbps = 20;
  runner.restart("alexnet", 16, s);
  runner.step();
  ASSERT_TRUE(runner.wait_for_iterations(1, 120));
  const ui::SessionStatus st = runner.status();
  EXPECT_EQ(st.model, "alexnet");
  EXPECT_EQ(st.batch, 16);
  EXPECT_EQ(st.settings.mode, OffloadMode::all);
  EXPECT_EQ(st.settings.transfer, TransferMode::sync);
  EXPECT_DOUBLE_EQ(st.settings.link_gbps, 20);
  // A model that does not exist fails the session with the reason; the
  // runner itself goes on waiting for the next instruction.
  runner.restart("no-such-net", 0, s);
  for (int i = 0; i < 200 && runner.status().state != ui::RunState::failed; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(runner.status().state, ui::RunState::failed);
  EXPECT_NE(runner.status().error.find("no-such-net"), std::string::npos) << runner.status().error;
}

}  // namespace
}  // namespace tidepool::app
