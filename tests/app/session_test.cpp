// The settings path the window uses: settings applied by the session
// between iterations, or refused with the reason (and the smallest
// workable budget) while training goes on unchanged; and the runner's one
// mailbox, from which the training thread takes the newest request at an
// iteration boundary.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <limits>
#include <thread>

#include "app/recorded_run.h"
#include "app/run_record.h"
#include "app/session.h"
#include "app/session_runner.h"
#include "engine/comm/local_group.h"
#include "engine/core/bytes_text.h"
#include "engine/run/lr_schedule.h"
#include "testing/run_here.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/stats_table.h"
#include "ui/scene/timeline.h"

namespace tidepool::app {
namespace {

// The runner's tests wait for what it recorded (SessionRunner::
// wait_for_iterations), with no time limit of their own: under
// ThreadSanitizer on a loaded 2-core machine the first alexnet iteration
// took over 120 s, and a run that hangs is failed by the test presets'
// per-test timeout (600 s, 1200 s under TSan).

RunSettings tiny(const std::filesystem::path& data) {
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "cifar10";
  o.data_dir = data.string();
  o.batch_size = 32;  // 320 training images: 10 iterations per epoch
  o.lr = 0.05f;
  o.progress = false;
  return o;
}

TEST(Session, AnAppliedBudgetIsThePoolFromTheNextIteration) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  TrainingSession session(tiny(dir.path()), {.room_to_grow = true});
  RingSink ring;
  session.start(&ring);
  session.train_iteration();
  const ui::SessionStatus before = session.status();
  ASSERT_GT(before.memory.arena_bytes, before.memory.pool_bytes) << "room to grow leaves the budget room";

  MemorySettings wanted = before.settings.memory;
  wanted.budget_bytes =
      before.memory.minimum_pool_bytes + (before.memory.arena_bytes - before.memory.minimum_pool_bytes) / 2;
  const ApplyOutcome outcome = session.apply(wanted);
  EXPECT_TRUE(outcome.applied) << outcome.message;
  EXPECT_NE(outcome.message.find("applied before iteration 2"), std::string::npos) << outcome.message;
  const ui::SessionStatus after = session.status();
  EXPECT_EQ(after.memory.pool_bytes, wanted.budget_bytes);
  EXPECT_EQ(after.settings.memory.budget_bytes, wanted.budget_bytes);
  session.train_iteration();
  EXPECT_EQ(session.status().iteration, 2);
  EXPECT_LE(ring.snapshot().iterations.back().footprint_bytes, wanted.budget_bytes);
}

TEST(Session, AnImpossibleBudgetIsRefusedWithTheMinimumAndTrainingContinues) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  TrainingSession session(tiny(dir.path()), {.room_to_grow = true});
  session.start(nullptr);
  session.train_iteration();
  const ui::SessionStatus before = session.status();
  MemorySettings impossible = before.settings.memory;
  impossible.budget_bytes = before.memory.minimum_pool_bytes / 2;
  const ApplyOutcome refused = session.apply(impossible);
  EXPECT_FALSE(refused.applied);
  EXPECT_NE(refused.message.find("too small"), std::string::npos) << refused.message;
  EXPECT_NE(refused.message.find("smallest budget that works is " + format_bytes(before.memory.minimum_pool_bytes)),
            std::string::npos)
      << refused.message;
  const StepReport r = session.train_iteration();
  EXPECT_TRUE(std::isfinite(r.result.loss));
  const ui::SessionStatus after = session.status();
  EXPECT_EQ(after.memory.pool_bytes, before.memory.pool_bytes);
  EXPECT_EQ(after.settings.memory, before.settings.memory);
  EXPECT_EQ(after.iteration, 2) << "the refused request did not stop training";

  // A budget above the arena reserved at start is refused too.
  impossible.budget_bytes = before.memory.arena_bytes + (1 << 20);
  const ApplyOutcome too_big = session.apply(impossible);
  EXPECT_FALSE(too_big.applied);
  EXPECT_NE(too_big.message.find("exceeds"), std::string::npos) << too_big.message;
}

// The row of the Stats view named `figure` ("" when there is none).
std::string stats_value(const std::vector<ui::StatsRow>& rows, const std::string& figure) {
  for (const ui::StatsRow& r : rows)
    if (r.figure == figure) return r.value;
  return "";
}

// The sim device computes no values: its status says so from the start,
// carries the plan's prediction, and the Stats view says "simulated: no
// numbers" where the test accuracy would be and puts the prediction beside
// the simulated times. A cpu session without a profile has numbers and no
// prediction.
TEST(Session, ASimSessionSaysNoNumbersAndCarriesThePlansPrediction) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  RunSettings settings = tiny(dir.path());
  settings.device = DeviceKind::sim;
  settings.profile = "m40";
  settings.memory.mode = OffloadMode::all;
  TrainingSession session(settings);
  EXPECT_FALSE(session.status().computes_values) << "known before the device exists";
  RingSink ring;
  session.start(&ring);
  session.train_iteration();
  session.train_iteration();
  const ui::SessionStatus s = session.status();
  EXPECT_FALSE(s.computes_values);
  ASSERT_TRUE(s.predicted);
  EXPECT_GT(s.predicted->iteration_us, 0.0);
  EXPECT_EQ(s.predicted->iteration_us, session.trainer().memory().predicted->iteration_us);
  EXPECT_EQ(s.predicted->stall_us, session.trainer().memory().predicted->stall_us);

  const RingSnapshot events = ring.snapshot();
  const ui::IterationStats stats = ui::build_stats(events, ui::build_timeline(events, 1), s.memory.pinned_bytes);
  const auto rows = ui::stats_table(s, stats);
  EXPECT_EQ(stats_value(rows, "test accuracy"), ui::kNoNumbers);
  const std::string time = stats_value(rows, "iteration time");
  EXPECT_NE(time.find(" ms simulated | "), std::string::npos) << time;
  char predicted[32];
  std::snprintf(predicted, sizeof predicted, "%.2f ms predicted", s.predicted->iteration_us * 1e-3);
  EXPECT_NE(time.find(predicted), std::string::npos) << time;
  EXPECT_NE(stats_value(rows, "stall time").find(" predicted"), std::string::npos);
  EXPECT_FALSE(ui::build_memory_load(events, s.memory.pool_bytes, 2, 32, 0, s.computes_values).computes_values);

  TrainingSession cpu(tiny(dir.path()));
  cpu.start(nullptr);
  EXPECT_TRUE(cpu.status().computes_values);
  EXPECT_FALSE(cpu.status().predicted) << "no performance model";
  EXPECT_EQ(stats_value(ui::stats_table(cpu.status(), {}), "test accuracy"), "after the first epoch");
}

TEST(Session, ALookaheadReplansThePrefetches) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  TrainingSession session(tiny(dir.path()), {.room_to_grow = true});
  session.start(nullptr);
  session.train_iteration();
  MemorySettings s = session.settings().memory;
  EXPECT_EQ(s.lookahead, 1) << "the command line's --lookahead";
  s.mode = OffloadMode::all;
  s.lookahead = 3;
  EXPECT_TRUE(session.apply(s).applied);
  session.train_iteration();
  EXPECT_EQ(session.status().settings.memory.lookahead, 3);
  EXPECT_EQ(session.trainer().memory().train.settings.memory.lookahead, 3);
  s.lookahead = -1;
  EXPECT_FALSE(session.apply(s).applied);
  EXPECT_EQ(session.trainer().memory().train.settings.memory.lookahead, 3) << "a refused request changes nothing";
}

// Async offloads in the least pool park few freed blocks, or none; the
// status names a pool that parks more, asking for it parks more, and so on
// until every block stays parked until needed.
TEST(Session, TheParkingPoolFromTheStatusParksOffloadedBlocks) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  RunSettings o = tiny(dir.path());
  o.model = "vdnn_constructed";  // its least pool cannot keep every freed block parked
  o.memory.mode = OffloadMode::all;
  // Convolutions without workspaces, so the least pool is the activations'
  // on every processor: `p` on AVX-512 picks workspaces big enough to leave
  // room for every parked block.
  o.memory.scheme = ConvScheme::m;
  TrainingSession session(o, {.room_to_grow = true});
  session.start(nullptr);
  session.train_iteration();
  ui::SessionStatus now = session.status();
  ASSERT_NE(now.memory.park_horizon, kParkUntilNeeded) << "the least pool cannot keep every freed block parked";
  MemorySettings roomy = now.settings.memory;
  int raises = 0;
  while (now.memory.parking_pool_bytes != 0 && raises < 5) {
    EXPECT_GT(now.memory.parking_pool_bytes, now.memory.pool_bytes);
    EXPECT_LE(now.memory.parking_pool_bytes, now.memory.arena_bytes);
    roomy.budget_bytes = now.memory.parking_pool_bytes;
    const ApplyOutcome outcome = session.apply(roomy);
    EXPECT_TRUE(outcome.applied) << outcome.message;
    session.train_iteration();
    const ui::SessionStatus after = session.status();
    EXPECT_EQ(after.memory.pool_bytes, roomy.budget_bytes);
    EXPECT_GT(after.memory.park_horizon, now.memory.park_horizon) << "the named pool parks more";
    now = after;
    ++raises;
  }
  EXPECT_GT(raises, 0);
  EXPECT_EQ(now.memory.park_horizon, kParkUntilNeeded);

  roomy.transfer = TransferMode::sync;  // sync transfers never park
  EXPECT_TRUE(session.apply(roomy).applied);
  session.train_iteration();
  EXPECT_EQ(session.status().memory.park_horizon, 0);
  EXPECT_EQ(session.status().memory.parking_pool_bytes, 0u);
}

TEST(Session, SettingsChangedMidRunKeepTheNumbers) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  auto checksum = [&](bool switch_settings) {
    TrainingSession session(tiny(dir.path()), {.room_to_grow = true});
    session.start(nullptr);
    for (int i = 0; i < 4; ++i) {
      if (switch_settings && i == 1) {
        MemorySettings s = session.settings().memory;
        s.mode = OffloadMode::all;
        s.heuristic = "high-end";
        s.transfer = TransferMode::sync;
        EXPECT_TRUE(session.apply(s).applied);
      }
      if (switch_settings && i == 3) {
        MemorySettings s = session.settings().memory;
        s.mode = OffloadMode::conv;
        s.heuristic = "smartpool";
        s.link_gbps = 5;
        EXPECT_TRUE(session.apply(s).applied);
      }
      session.train_iteration();
    }
    return session.trainer().param_checksum();
  };
  EXPECT_EQ(checksum(false), checksum(true));
}

// A learning rate as the divergence message writes it.
std::string lr_text(float lr) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", lr);
  return text;
}

// Where the weight-role tensor named `suffix` starts in read_parameters()'s
// values (schedule order), and its name.
std::pair<std::size_t, std::string> find_parameter(const Schedule& s, const std::string& suffix) {
  std::size_t at = 0;
  for (int t : s.persistent) {
    const TensorInfo& info = s.tensors[t].info;
    if (info.role != Role::weight) continue;
    if (info.name.size() >= suffix.size() && info.name.compare(info.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return {at, info.name};
    at += info.bytes() / sizeof(float);
  }
  ADD_FAILURE() << "no parameter named *" << suffix;
  return {0, ""};
}

// A NaN in batchnorm's running mean never reaches the training loss (batch
// statistics normalise in training), so only the parameter check can see
// it: at the last iteration too, after which the session trains no more.
TEST(Session, ANonFiniteParameterWithAFiniteLossIsDivergence) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  RunSettings o = tiny(dir.path());
  o.iterations = 2;
  TrainingSession session(o);
  session.start(nullptr);
  session.train_iteration();
  ASSERT_FALSE(session.diverged()) << session.divergence();
  std::vector<float> values = session.trainer().read_parameters();
  const auto [at, name] = find_parameter(session.trainer().train_schedule(), "running_mean");
  values[at] = std::nanf("");
  session.trainer().write_parameters(values);

  const StepReport r = session.train_iteration();
  EXPECT_TRUE(std::isfinite(r.result.loss)) << "the loss does not see it";
  ASSERT_TRUE(session.diverged());
  EXPECT_TRUE(session.finished()) << "the last iteration is checked too";
  EXPECT_EQ(session.divergence(), "training diverged at iteration 2 of 2 (epoch 1, learning rate " +
                                      lr_text(learning_rate(o.lr_schedule, o.lr, 1, 2)) + "): " + name +
                                      " is no longer finite; try a lower --lr");
}

// A NaN that only evaluation meets (the last layer's bias, after the
// iteration's check) is divergence too, and training ends there.
TEST(Session, ANonFiniteTestLossIsDivergence) {
  testing::TempDir dir("session");
  testing::write_tiny_cifar10(dir.path());
  TrainingSession session(tiny(dir.path()));
  session.start(nullptr);
  session.train_iteration();
  std::vector<float> values = session.trainer().read_parameters();
  const auto [at, name] = find_parameter(session.trainer().train_schedule(), "fc.bias");
  values[at] = std::numeric_limits<float>::infinity();
  session.trainer().write_parameters(values);
  EXPECT_TRUE(std::isnan(session.evaluate().loss)) << "what it returns is no evaluation";
  ASSERT_TRUE(session.diverged());
  EXPECT_NE(session.divergence().find("at iteration 1 of 10 (epoch 1, learning rate "), std::string::npos)
      << session.divergence();
  EXPECT_NE(session.divergence().find("the test loss is nan in the evaluation after it"), std::string::npos)
      << session.divergence();
  EXPECT_THROW(session.train_iteration(), std::runtime_error) << "no training on garbage";
}

TEST(SessionRunner, RequestsFromTheUiThreadApplyAtIterationBoundaries) {
  testing::TempDir dir("runner");
  testing::write_tiny_cifar10(dir.path());
  SessionRunner runner(tiny(dir.path()));
  runner.start(/*paused=*/true);
  runner.step();
  runner.wait_for_iterations(1);
  ui::SessionStatus s = runner.status();
  ASSERT_EQ(s.state, ui::RunState::paused) << s.error;
  EXPECT_EQ(s.iteration, 1);
  EXPECT_FALSE(runner.events(0).iterations.empty()) << "the UI sees the iteration's events";

  // A workable budget: applied before the next iteration.
  MemorySettings wanted = s.settings.memory;
  wanted.budget_bytes = s.memory.minimum_pool_bytes + (s.memory.arena_bytes - s.memory.minimum_pool_bytes) / 4;
  runner.request(wanted);
  runner.step();
  runner.wait_for_iterations(2);
  s = runner.status();
  EXPECT_EQ(s.iteration, 2);
  EXPECT_EQ(s.memory.pool_bytes, wanted.budget_bytes);
  EXPECT_EQ(s.requests, 1u);
  EXPECT_FALSE(s.refused) << s.message;
  EXPECT_FALSE(s.replanning) << "planned, and applied";
  EXPECT_NE(s.message.find(" (planned in "), std::string::npos) << "the outcome says what the re-plan cost: " << s.message;

  // An impossible one: refused, and the next iteration still trains.
  MemorySettings impossible = s.settings.memory;
  impossible.budget_bytes = s.memory.minimum_pool_bytes / 3;
  runner.request(impossible);
  runner.step();
  runner.wait_for_iterations(3);
  s = runner.status();
  EXPECT_EQ(s.iteration, 3);
  EXPECT_EQ(s.requests, 2u);
  EXPECT_TRUE(s.refused);
  EXPECT_EQ(s.memory.pool_bytes, wanted.budget_bytes);
  EXPECT_EQ(runner.events(0).iterations.back().iteration, 2) << "iterations 0, 1 and 2 were trained";

  // Two requests in a row: the newer one is what the next iteration
  // trains with (the older was applied first, or replaced in the mailbox
  // before the training thread took it, depending on when it woke).
  MemorySettings first = s.settings.memory, second = s.settings.memory;
  first.mode = OffloadMode::conv;
  second.mode = OffloadMode::all;
  runner.request(first);
  runner.request(second);
  runner.step();
  runner.wait_for_iterations(4);
  s = runner.status();
  EXPECT_EQ(s.settings.memory.mode, OffloadMode::all);
  EXPECT_GE(s.requests, 3u);
  EXPECT_LE(s.requests, 4u);

  // Resumed, it trains on without being stepped; pausing again holds it.
  runner.resume();
  runner.wait_for_iterations(6);
  runner.pause();
  runner.stop();
  EXPECT_GE(runner.status().iteration, 6);
}

// The window's path: a diverging session stops training, its state and
// message reach the UI through the status, and the runner waits for a
// restart, which trains again.
TEST(SessionRunner, DivergenceStopsTrainingAndIsReported) {
  testing::TempDir dir("runner");
  testing::write_tiny_cifar10(dir.path());
  RunSettings wild = tiny(dir.path());
  wild.lr = 1e6f;
  SessionRunner runner(wild);
  runner.start();
  runner.wait_for_iterations(1000);  // to the end, or diverged
  ui::SessionStatus s = runner.status();
  ASSERT_EQ(s.state, ui::RunState::diverged) << s.error;
  EXPECT_EQ(s.error.rfind("training diverged at iteration " + std::to_string(s.iteration) + " of 10 (epoch 1, ", 0), 0u)
      << s.error;
  EXPECT_LT(s.iteration, 10);
  runner.resume();  // nothing to resume: the session is over
  runner.step();
  EXPECT_EQ(runner.status().state, ui::RunState::diverged);

  runner.restart(tiny(dir.path()));
  // Until the new session has replaced the diverged one: its state, not a
  // time limit (the sleep is how often to look).
  while (runner.status().state == ui::RunState::diverged) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  runner.wait_for_iterations(s.iteration + 1);
  s = runner.status();
  EXPECT_NE(s.state, ui::RunState::diverged);
  EXPECT_TRUE(s.error.empty()) << s.error;
  runner.stop();
}

TEST(SessionRunner, RestartsWithOtherSettingsAndReportsFailures) {
  testing::TempDir dir("runner");
  testing::write_tiny_cifar10(dir.path());
  SessionRunner runner(tiny(dir.path()));
  runner.start(/*paused=*/true);
  RunSettings other = tiny(dir.path());
  other.model = "alexnet";
  other.batch_size = 16;
  other.memory.mode = OffloadMode::all;
  other.memory.transfer = TransferMode::sync;
  other.memory.link_gbps = 20;
  runner.restart(other);
  runner.step();
  runner.wait_for_iterations(1);
  const ui::SessionStatus st = runner.status();
  EXPECT_EQ(st.settings.model, "alexnet");
  EXPECT_EQ(st.settings.batch_size, 16);
  EXPECT_EQ(st.settings.memory.mode, OffloadMode::all);
  EXPECT_EQ(st.settings.memory.transfer, TransferMode::sync);
  EXPECT_DOUBLE_EQ(st.settings.memory.link_gbps, 20);
  // A model that does not exist fails the session with the reason; the
  // runner itself goes on waiting for the next instruction.
  other.model = "no-such-net";
  runner.restart(other);
  // No iteration can be trained, so this waits for the failure (however
  // slowly a loaded machine tears the alexnet session down), not a count.
  runner.wait_for_iterations(std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(runner.status().state, ui::RunState::failed);
  EXPECT_NE(runner.status().error.find("no-such-net"), std::string::npos) << runner.status().error;
}

nlohmann::json read_summary(const std::filesystem::path& folder) {
  std::ifstream in(folder / "summary.json");
  return nlohmann::json::parse(in);
}

// The window's session saved (`tidepool --out DIR` without --batch): the
// runner writes the run folder as --batch does while the UI steps it;
// stopped (the window closed), the folder is a stopped run that `tidepool
// view` opens and `--batch --resume` continues to the same bits as a run
// that was never interrupted.
TEST(SessionRunner, AnOutFolderSavesTheSessionAndBatchResumeContinuesIt) {
  testing::TempDir dir("runner-out");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings settings = tiny(dir.path() / "data");  // 10 iterations per epoch
  settings.iterations = 14;
  settings.trace_iterations = 2;
  settings.out = (dir.path() / "window").string();
  {
    SessionRunner runner(settings);
    runner.record_to(std::make_unique<RunRecord>(settings, nullptr));
    runner.start(/*paused=*/true);
    for (int i = 0; i < 12; ++i) runner.step();
    runner.wait_for_iterations(12);
    ASSERT_EQ(runner.status().iteration, 12) << runner.status().error;
    runner.stop();  // the window closed: a checkpoint and summary.json
    EXPECT_NE(runner.status().state, ui::RunState::failed) << runner.status().error;
  }
  const std::filesystem::path folder = settings.out;
  for (const char* file : {"events.bin", "trace.json", "metrics.csv", "memory_load.csv", "summary.json",
                           "checkpoint.bin", "timeline.png", "address_map.png", "memory_load.png"})
    EXPECT_TRUE(std::filesystem::exists(folder / file)) << file;
  const nlohmann::json saved = read_summary(folder);
  EXPECT_EQ(saved.at("status"), "stopped");
  EXPECT_EQ(saved.at("iterations"), 12);
  EXPECT_EQ(saved.at("total_iterations"), 14);
  {
    std::ifstream metrics(folder / "metrics.csv");
    std::string header, row, more;
    std::getline(metrics, header);
    std::getline(metrics, row);
    EXPECT_EQ(row.rfind("1,10,", 0), 0u) << "the first epoch's row: " << row;
    EXPECT_FALSE(std::getline(metrics, more)) << "a row for the epoch the stop cut: " << more;
  }
  // `tidepool view` reads it.
  const RecordedRun recorded(folder);
  EXPECT_EQ(recorded.status().iteration, 12);
  EXPECT_FALSE(recorded.events(0).iterations.empty());

  // --batch --resume continues it; an uninterrupted --batch run ends with the same bits.
  const auto resumed = testing::run_here("--batch --quiet --resume " + folder.string(), testing::Captured::stdout_only);
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  const std::string straight = (dir.path() / "straight").string();
  const auto whole = testing::run_here("--batch --quiet --model resnet20 --dataset cifar10 --data " +
                                           (dir.path() / "data").string() +
                                           " --batch-size 32 --lr 0.05 --iterations 14 --trace-iterations 2 --out " +
                                           straight,
                                       testing::Captured::stdout_only);
  ASSERT_EQ(whole.status, 0) << whole.output;
  const nlohmann::json continued = read_summary(folder), uninterrupted = read_summary(straight);
  EXPECT_EQ(continued.at("status"), "done");
  EXPECT_EQ(continued.at("iterations"), 14);
  EXPECT_EQ(continued.at("param_checksum"), uninterrupted.at("param_checksum"));
  EXPECT_EQ(continued.at("final_test_accuracy"), uninterrupted.at("final_test_accuracy"));
}

// A saved session is refused where --batch would be: --out into a folder
// that holds a run names --resume and --force, and nothing is written.
// A saved session is a run that --batch --resume continues to the same
// bits: Controls may change how memory is used, not what is computed.
TEST(SessionRunner, ASavedSessionRefusesWhatChangesItsNumbers) {
  testing::TempDir dir("runner-saved");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings settings = tiny(dir.path() / "data");
  settings.out = (dir.path() / "saved").string();
  SessionRunner runner(settings);
  runner.record_to(std::make_unique<RunRecord>(settings, nullptr));
  runner.start(/*paused=*/true);
  MemorySettings other_algo = settings.memory;
  other_algo.scheme = settings.memory.scheme == ConvScheme::m ? ConvScheme::p : ConvScheme::m;
  runner.request(other_algo);
  runner.step();
  runner.wait_for_iterations(1);
  ui::SessionStatus st = runner.status();
  EXPECT_TRUE(st.refused);
  EXPECT_NE(st.message.find("--algo"), std::string::npos) << st.message;
  EXPECT_EQ(st.settings.memory.scheme, settings.memory.scheme);
  MemorySettings offloaded = settings.memory;  // keeps the numbers: applied
  offloaded.mode = OffloadMode::all;
  runner.request(offloaded);
  runner.step();
  runner.wait_for_iterations(2);
  st = runner.status();
  EXPECT_FALSE(st.refused) << st.message;
  EXPECT_EQ(st.settings.memory.mode, OffloadMode::all);
  runner.stop();
}

// Closed before it trained an iteration, a saved session writes nothing.
TEST(SessionRunner, ASavedSessionClosedBeforeItTrainsWritesNothing) {
  testing::TempDir dir("runner-unsaved");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings settings = tiny(dir.path() / "data");
  settings.out = (dir.path() / "never").string();
  {
    SessionRunner runner(settings);
    runner.record_to(std::make_unique<RunRecord>(settings, nullptr));
    runner.start(/*paused=*/true);
    // The session is set up (its start's events are in the record's buffer).
    while (runner.status().state == ui::RunState::starting) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_NE(runner.status().state, ui::RunState::failed) << runner.status().error;
    runner.stop();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "never"));
}

TEST(SessionRunner, AnOutFolderThatHoldsARunIsRefusedBeforeTheSessionStarts) {
  testing::TempDir dir("runner-out-refused");
  std::filesystem::create_directories(dir.path() / "run");
  std::ofstream(dir.path() / "run" / "summary.json") << "{}";
  RunSettings settings = tiny(dir.path() / "data");
  settings.out = (dir.path() / "run").string();
  try {
    RunRecord record(settings, nullptr);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    const std::string said = e.what();
    EXPECT_NE(said.find("holds a run"), std::string::npos) << said;
    EXPECT_NE(said.find("--resume " + settings.out), std::string::npos) << said;
    EXPECT_NE(said.find("--force"), std::string::npos) << said;
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path() / "run"), {}), 1);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "data"));
}

// The ranks' guard: after an iteration every rank's parameters are
// checksummed and compared; ranks that no longer train one model stop the
// run, naming the rank that differs (every rank says the same).
TEST(Session, RanksWhoseParametersDifferStopTheRunNamingTheRank) {
  testing::TempDir dir("ranks-agree");
  testing::write_tiny_cifar10(dir.path() / "data");
  LocalGroup group(2);
  std::string said[2];
  bool agreed_first[2] = {false, false};
  auto rank = [&](int r) {
    TrainingSession session(tiny(dir.path() / "data"), {.comm = &group.rank(r)});
    session.start(nullptr);
    session.train_iteration();
    session.check_ranks_agree();  // the same model on both: no word
    agreed_first[r] = true;
    if (r == 1) {  // one parameter of rank 1 off by its last bit
      std::vector<float> state = session.trainer().read_state();
      state[0] = std::nextafter(state[0], 1e9f);
      session.trainer().write_state(state);
    }
    try {
      session.check_ranks_agree();
    } catch (const CommError& e) {
      said[r] = e.what();
    }
  };
  std::jthread other(rank, 1);
  rank(0);
  other.join();
  for (int r : {0, 1}) {
    EXPECT_TRUE(agreed_first[r]) << r;
    EXPECT_NE(said[r].find("the parameters of rank 1 differ from rank 0's"), std::string::npos) << r << ": " << said[r];
  }
}

}  // namespace
}  // namespace tidepool::app
