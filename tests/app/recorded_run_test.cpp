// `tidepool view`'s side of a run folder: RecordedRun reads summary.json
// into the status the window shows and events.bin into its events, does
// nothing when asked to change anything, and refuses a folder that is not a
// finished run with a message that says why.
#include "app/recorded_run.h"

#include <gtest/gtest.h>

#include <fstream>

#include "app/batch_run.h"
#include "app/memory_report.h"
#include "engine/memory/parking.h"
#include "engine/observe/sinks/event_file_writer.h"
#include "testing/temp_dir.h"
#include "ui/png/run_pictures.h"
#include "ui/scene/address_map.h"
#include "ui/scene/iteration_number.h"
#include "ui/scene/memory_load.h"
#include "ui/scene/timeline.h"
#include "testing/tiny_datasets.h"

namespace tidepool::app {
namespace {

namespace fs = std::filesystem;

RunSettings tiny_run(const fs::path& data, const fs::path& out) {
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "cifar10";
  o.data_dir = data.string();
  o.batch_size = 8;
  o.iterations = 3;
  o.trace_iterations = 2;
  o.out = out.string();
  o.lr = 0.05f;
  o.progress = false;
  o.memory.mode = OffloadMode::all;
  return o;
}

// Why opening `folder` is refused ("" when it opens).
std::string refusal(const fs::path& folder) {
  try {
    RecordedRun run(folder);
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

TEST(RecordedRunStatus, ComesFromTheSummary) {
  RunSettings trained;
  trained.model = "vgg11";
  trained.dataset = "cifar100";
  trained.batch_size = 64;
  trained.epochs = 4;
  trained.seed = 9;
  trained.memory.mode = OffloadMode::autoswap;
  trained.memory.transfer = TransferMode::async;
  trained.memory.heuristic = "best-fit";
  trained.memory.budget_bytes = std::size_t{300} << 20;
  trained.memory.link_gbps = 4;
  MemorySummary memory;
  memory.pool_bytes = std::size_t{300} << 20;
  memory.minimum_pool_bytes = std::size_t{200} << 20;
  memory.peak_load_bytes = std::size_t{250} << 20;
  memory.footprint_bytes = std::size_t{260} << 20;
  memory.pinned_bytes = std::size_t{90} << 20;
  memory.load_limit_bytes = std::size_t{240} << 20;
  memory.park_horizon = kParkUntilNeeded;
  memory.arena_bytes = std::size_t{512} << 20;
  nlohmann::json summary = {{"model", "vgg11"},       {"dataset", "cifar100"}, {"device", "cpu (oneDNN)"},
                            {"batch_size", 64},        {"epochs", 4},           {"iterations", 300},
                            {"total_iterations", 400}, {"mode", "autoswap"},    {"transfer", "async"},
                            {"order", "prefetch-first"}, {"heuristic", "best-fit"}, {"algo", "m"},
                            {"final_test_accuracy", 0.5}, {"settings", to_json(trained)}};
  summary.update(memory_json(memory));

  const ui::SessionStatus s = RecordedRun::status_from_summary(summary);
  EXPECT_EQ(s.state, ui::RunState::recorded);
  EXPECT_EQ(s.settings.model, "vgg11");
  EXPECT_EQ(s.settings.dataset, "cifar100");
  EXPECT_EQ(s.dataset_name, "cifar100");
  EXPECT_EQ(s.settings.batch_size, 64);
  EXPECT_EQ(s.settings.seed, 9u);
  EXPECT_EQ(s.settings.memory, trained.memory);  // the budget and the link too, from "settings"
  EXPECT_EQ(s.device, "cpu (oneDNN)");
  EXPECT_EQ(s.iteration, 300);
  EXPECT_EQ(s.total_iterations, 400);
  EXPECT_EQ(s.epochs, 4);
  EXPECT_EQ(s.epoch, 2);  // iteration 300 of 4 epochs of 100
  EXPECT_FLOAT_EQ(s.test_accuracy, 0.5f);
  EXPECT_TRUE(s.link_adjustable);
  EXPECT_EQ(s.memory.pool_bytes, memory.pool_bytes);
  EXPECT_EQ(s.memory.minimum_pool_bytes, memory.minimum_pool_bytes);
  EXPECT_EQ(s.memory.peak_load_bytes, memory.peak_load_bytes);
  EXPECT_EQ(s.memory.footprint_bytes, memory.footprint_bytes);
  EXPECT_EQ(s.memory.pinned_bytes, memory.pinned_bytes);
  EXPECT_EQ(s.memory.load_limit_bytes, memory.load_limit_bytes);
  EXPECT_EQ(s.memory.park_horizon, kParkUntilNeeded);
  EXPECT_EQ(s.memory.arena_bytes, memory.arena_bytes);

  // Every summary next to an events.bin has its settings; one without is
  // not a run's.
  nlohmann::json without = summary;
  without.erase("settings");
  EXPECT_THROW(RecordedRun::status_from_summary(without), nlohmann::json::exception);
  summary.erase("iterations");
  EXPECT_THROW(RecordedRun::status_from_summary(summary), nlohmann::json::exception);
}

// A sim run's losses were zeros: its settings say so, and the views say
// "simulated: no numbers". summary.json keeps no prediction.
TEST(RecordedRunStatus, OfASimRunComputesNoValues) {
  RunSettings trained;
  trained.device = DeviceKind::sim;
  trained.profile = "m40";
  nlohmann::json summary = {{"iterations", 2}, {"epochs", 1}, {"settings", to_json(trained)}};
  summary.update(memory_json({}));
  const ui::SessionStatus sim = RecordedRun::status_from_summary(summary);
  EXPECT_FALSE(sim.computes_values);
  EXPECT_FALSE(sim.predicted);
  EXPECT_FALSE(sim.link_adjustable);
  summary["settings"] = to_json(RunSettings{});
  EXPECT_TRUE(RecordedRun::status_from_summary(summary).computes_values);
}

// A --batch run end to end: what it wrote, RecordedRun shows.
TEST(RecordedRunOfABatchRun, ShowsTheTracedIterationsAndTheSummary) {
  testing::TempDir dir("recorded_batch");
  testing::write_tiny_cifar10(dir.path() / "data");
  const nlohmann::json summary = run_batch(tiny_run(dir.path() / "data", dir.path() / "run"), std::nullopt);
  RecordedRun recorded(dir.path() / "run");
  EXPECT_TRUE(recorded.read_only());
  const ui::SessionStatus s = recorded.status();
  EXPECT_EQ(s.state, ui::RunState::recorded);
  EXPECT_EQ(s.iteration, 3);
  EXPECT_EQ(s.total_iterations, 3);
  EXPECT_EQ(s.settings.model, "resnet20");
  EXPECT_EQ(s.settings.batch_size, 8);
  EXPECT_EQ(s.settings.memory.mode, OffloadMode::all);
  EXPECT_EQ(s.memory.pool_bytes, summary["pool_bytes"].get<std::size_t>());
  EXPECT_EQ(s.memory.peak_load_bytes, summary["peak_load_bytes"].get<std::size_t>());
  EXPECT_GT(s.memory.pinned_bytes, 0u);

  const RingSnapshot events = recorded.events(0);
  EXPECT_EQ(events.dropped_spans + events.dropped_allocs + events.dropped_loads + events.dropped_iterations, 0u);
  ASSERT_EQ(events.iterations.size(), 2u);  // --trace-iterations 2
  for (std::int64_t i = 0; i < 2; ++i) EXPECT_EQ(events.iterations[static_cast<std::size_t>(i)].iteration, i);
  EXPECT_FALSE(events.placement.empty());
  for (const AllocEvent& a : events.placement) EXPECT_EQ(a.iteration, -1);
  bool offloads = false;
  for (const SpanEvent& e : events.spans) {
    EXPECT_LT(e.iteration, 2);
    offloads |= e.kind == SpanKind::offload;
  }
  EXPECT_TRUE(offloads);  // mode all
  EXPECT_FALSE(events.allocs.empty());
  EXPECT_FALSE(events.loads.empty());
}

// --trace-from 3 --trace-iterations 2: iterations 4 and 5 (counting from
// 1, events' 3 and 4) are recorded with the set-up placement, and the three
// pictures a run folder holds and `view` shows are of those iterations, the
// address map of the last of them.
TEST(RecordedRunOfABatchRun, TraceFromRecordsTheIterationsAfterIt) {
  testing::TempDir dir("recorded_trace_from");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings settings = tiny_run(dir.path() / "data", dir.path() / "run");
  settings.iterations = 6;
  settings.trace_from = 3;
  run_batch(settings, std::nullopt);
  RecordedRun recorded(dir.path() / "run");
  const RingSnapshot events = recorded.events(0);
  ASSERT_EQ(events.iterations.size(), 2u);
  EXPECT_EQ(events.iterations[0].iteration, 3);
  EXPECT_EQ(events.iterations[1].iteration, 4);
  EXPECT_FALSE(events.placement.empty()) << "the parameters, placed before any iteration";
  for (const SpanEvent& e : events.spans) EXPECT_TRUE(e.iteration == 3 || e.iteration == 4) << e.iteration;
  for (const AllocEvent& a : events.allocs) EXPECT_TRUE(a.iteration == 3 || a.iteration == 4) << a.iteration;

  const ui::TimelineScene timeline = ui::build_timeline(events, ui::kRunPictureIterations);
  ASSERT_EQ(timeline.iterations.size(), 2u);
  EXPECT_EQ(ui::iterations_text(timeline.iterations.front().iteration, timeline.iterations.back().iteration),
            "iterations 4-5");
  const ui::MemoryLoadScene load = ui::build_memory_load(events, 0, ui::kRunPictureIterations, settings.batch_size);
  ASSERT_FALSE(load.points.empty());
  EXPECT_EQ(ui::iterations_text(load.points.front().iteration, load.points.back().iteration), "iterations 4-5");
  EXPECT_EQ(ui::build_address_map(events, 1u << 30).iteration, 4) << "the last traced one, iteration 5";
  for (const char* picture : {"timeline.png", "memory_load.png", "address_map.png"})
    EXPECT_TRUE(fs::exists(dir.path() / "run" / picture)) << picture;
}

TEST(RecordedRunOfABatchRun, ATraceFromPastTheRunIsRefusedBeforeTheFolderIsMade) {
  testing::TempDir dir("recorded_trace_past");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings settings = tiny_run(dir.path() / "data", dir.path() / "run");
  settings.trace_from = 3;  // the run has 3 iterations: nothing after them to record
  try {
    run_batch(settings, std::nullopt);
    FAIL() << "refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--trace-from 3 is not before the run's last of 3 iterations"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "run")) << "a refused start leaves the disk as it was";
}

// A run folder written by hand, quick to make and to damage: summary.json
// and an events.bin of the set-up placement and one iteration.
class RecordedRunFolder : public ::testing::Test {
 protected:
  void SetUp() override { write_run(run()); }
  fs::path run() const { return dir_.path() / "run"; }
  static void write_run(const fs::path& folder) {
    fs::create_directories(folder);
    RunSettings settings;
    settings.model = "resnet20";
    settings.dataset = "cifar10";
    MemorySummary memory;
    memory.pool_bytes = 1 << 20;
    nlohmann::json summary = {{"model", "resnet20"}, {"dataset", "cifar10"}, {"batch_size", 128},
                              {"epochs", 1},         {"iterations", 1},      {"settings", to_json(settings)}};
    summary.update(memory_json(memory));
    std::ofstream(folder / "summary.json") << summary.dump(2);
    EventFileWriter events((folder / "events.bin").string());
    events.on_alloc(AllocEvent{.iteration = -1, .name = "conv1.weight", .role = Role::weight, .bytes = 4096});
    events.on_alloc(AllocEvent{.iteration = 0, .name = "conv1.out", .offset = 4096, .bytes = 8192});
    events.on_span(SpanEvent{.iteration = 0, .layer = "conv1", .start_us = 1, .end_us = 5});
    events.on_load(LoadSample{.iteration = 0, .time_us = 1, .load_bytes = 12288, .extent_bytes = 12288});
    events.on_iteration(IterationSummary{.iteration = 0, .start_us = 0, .end_us = 6, .peak_load_bytes = 12288});
    events.flush();
  }
  // A copy of the run folder to damage.
  fs::path copy(const std::string& name) const {
    const fs::path to = dir_.path() / name;
    fs::copy(run(), to, fs::copy_options::recursive);
    return to;
  }
  testing::TempDir dir_{"recorded"};
};

TEST_F(RecordedRunFolder, HoldsTheFilesEvents) {
  const RecordedRun recorded(run());
  const RingSnapshot events = recorded.events(0);
  ASSERT_EQ(events.placement.size(), 1u);
  EXPECT_EQ(events.placement[0].name, "conv1.weight");
  ASSERT_EQ(events.allocs.size(), 1u);
  EXPECT_EQ(events.allocs[0].name, "conv1.out");
  ASSERT_EQ(events.spans.size(), 1u);
  EXPECT_EQ(events.spans[0].layer, "conv1");
  EXPECT_EQ(events.loads.size(), 1u);
  ASSERT_EQ(events.iterations.size(), 1u);
  EXPECT_EQ(events.iterations[0].peak_load_bytes, 12288u);
  EXPECT_EQ(recorded.status().memory.pool_bytes, 1u << 20);
}

// A data-parallel run's folder: each other rank's events.rankN.bin, where
// the folder has it (a rank on another machine wrote its own elsewhere).
TEST_F(RecordedRunFolder, ShowsTheOtherRanksEventsItHolds) {
  const fs::path folder = copy("ranked");
  nlohmann::json summary;
  std::ifstream(folder / "summary.json") >> summary;
  summary["settings"]["ranks"] = 3;
  std::ofstream(folder / "summary.json") << summary.dump(2);
  {
    EventFileWriter rank2((folder / "events.rank2.bin").string());
    rank2.on_iteration(IterationSummary{.iteration = 0, .start_us = 0, .end_us = 7, .peak_load_bytes = 777});
    rank2.flush();
  }
  const RecordedRun recorded(folder);
  EXPECT_EQ(recorded.event_ranks(), (std::vector<int>{0, 2})) << "rank 1's file is not here";
  ASSERT_EQ(recorded.events(2).iterations.size(), 1u);
  EXPECT_EQ(recorded.events(2).iterations[0].peak_load_bytes, 777u);
  EXPECT_EQ(recorded.events(0).iterations[0].peak_load_bytes, 12288u);
  EXPECT_TRUE(recorded.events(1).iterations.empty());
  EXPECT_EQ(recorded.status().settings.memory.ranks, 3);
}

TEST_F(RecordedRunFolder, AsksToChangeNothingChangeNothing) {
  RecordedRun recorded(run());
  const std::uint64_t version = recorded.events_version(0);
  const ui::SessionStatus before = recorded.status();
  MemorySettings other = before.settings.memory;
  other.mode = OffloadMode::base;
  recorded.request(other);
  recorded.pause();
  recorded.step();
  recorded.resume();
  recorded.restart(RunSettings{});
  const ui::SessionStatus after = recorded.status();
  EXPECT_EQ(after.settings.memory, before.settings.memory);
  EXPECT_EQ(after.state, ui::RunState::recorded);
  EXPECT_EQ(after.requests, 0u);
  EXPECT_EQ(recorded.events_version(0), version);
}

TEST_F(RecordedRunFolder, AFolderThatIsNotARunIsRefused) {
  const std::string missing = refusal(dir_.path() / "nowhere");
  EXPECT_NE(missing.find("nowhere is not a Tidepool run folder: it does not exist"), std::string::npos) << missing;
  const std::string file = refusal(run() / "summary.json");
  EXPECT_NE(file.find("is not a Tidepool run folder: it is a file"), std::string::npos) << file;
  fs::create_directories(dir_.path() / "data");
  const std::string data = refusal(dir_.path() / "data");
  EXPECT_NE(data.find("data is not a Tidepool run folder: no events.bin (runs written by --batch have one)"),
            std::string::npos)
      << data;
  const fs::path unfinished = copy("unfinished");
  fs::remove(unfinished / "summary.json");
  const std::string no_summary = refusal(unfinished);
  EXPECT_NE(no_summary.find("is not a Tidepool run folder: no summary.json"), std::string::npos) << no_summary;
}

TEST_F(RecordedRunFolder, ABrokenSummaryIsNamed) {
  const fs::path broken = copy("broken_summary");
  std::ofstream(broken / "summary.json") << "{\"model\": ";
  const std::string not_json = refusal(broken);
  EXPECT_NE(not_json.find("summary.json is not JSON"), std::string::npos) << not_json;
  std::ofstream(broken / "summary.json") << "{\"model\": \"resnet20\"}";
  const std::string incomplete = refusal(broken);
  EXPECT_NE(incomplete.find("summary.json is not a Tidepool run summary"), std::string::npos) << incomplete;
}

TEST_F(RecordedRunFolder, ATruncatedEventsFileIsRefusedWithTheReadersReason) {
  const fs::path cut = copy("cut");
  fs::resize_file(cut / "events.bin", fs::file_size(cut / "events.bin") / 2);
  const std::string why = refusal(cut);
  EXPECT_NE(why.find((cut / "events.bin").string() + " is truncated"), std::string::npos) << why;
}

TEST_F(RecordedRunFolder, AnEventsFileWithoutIterationsHasNothingToShow) {
  const fs::path empty = copy("untraced");
  {
    EventFileWriter writer((empty / "events.bin").string());
    writer.on_alloc(AllocEvent{.iteration = -1, .name = "conv1.weight", .role = Role::weight, .bytes = 256});
    writer.flush();
  }
  const std::string why = refusal(empty);
  EXPECT_NE(why.find("holds no traced iteration"), std::string::npos) << why;
}

}  // namespace
}  // namespace tidepool::app
