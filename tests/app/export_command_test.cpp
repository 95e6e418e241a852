// `tidepool export RUN_DIR --pytorch-snapshot FILE` and `tidepool replay
// RUN_DIR`: a run and its export replay to the same figures, the file reads
// back to the run's trace, and export refuses what it must.
#include "app/commands/export_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "app/commands/replay_command.h"
#include "app/run_snapshot.h"
#include "engine/core/file_bytes.h"
#include "engine/memory/snapshot/snapshot_file.h"
#include "testing/run_command.h"
#include "testing/snapshot_traces.h"
#include "testing/temp_dir.h"

namespace tidepool::app {
namespace {

namespace fs = std::filesystem;

// resnet20 on the sim device (no arithmetic: a second), two traced
// iterations whose async offloads park freed blocks (a budget just above
// the smallest), so the export holds frees that complete later.
std::string train(const fs::path& out, int traced = 2) {
  return std::string(TIDEPOOL_BINARY) +
         " --batch --quiet --device sim --profile m40 --model resnet20 --dataset generated --batch-size 4 "
         "--iterations 2 --mode all --transfer async --budget 6MiB --trace-iterations " +
         std::to_string(traced) + " --out " + out.string();
}

class ExportCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("export");
    const testing::CommandResult r = testing::run_command(train(run()));
    ASSERT_EQ(r.status, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path run() { return *dir_ / "run"; }
  static fs::path file(const std::string& name) { return *dir_ / name; }

  static nlohmann::json replay_json(const fs::path& what) {
    std::ostringstream out;
    ReplayRequest q{what.string()};
    q.json = true;
    EXPECT_EQ(replay_command(q, out), 0);
    return nlohmann::json::parse(out.str());
  }
  static std::string exported(const std::string& name) {
    std::ostringstream out;
    EXPECT_EQ(export_command({run(), file(name), true}, out), 0);
    return out.str();
  }

  static testing::TempDir* dir_;
};
testing::TempDir* ExportCommand::dir_ = nullptr;

TEST_F(ExportCommand, ReplayOfTheExportGivesTheRunsFigures) {
  const std::string said = exported("run.pickle");
  EXPECT_NE(said.find("wrote " + file("run.pickle").string() + " (pickle, protocol 4, "), std::string::npos) << said;
  exported("run.json");
  const nlohmann::json of_run = replay_json(run());
  EXPECT_EQ(of_run.at("format"), "run");
  EXPECT_GT(of_run.at("allocs").get<int>(), 700) << "two iterations and the parameters";
  for (const char* name : {"run.pickle", "run.json"}) {
    const nlohmann::json of_export = replay_json(file(name));
    EXPECT_EQ(of_export.at("format"), name == std::string("run.pickle") ? "pickle" : "json");
    for (const char* key : {"events", "allocs", "frees", "peak_load_bytes", "heuristics"})
      EXPECT_EQ(of_export.at(key), of_run.at(key)) << name << ": " << key;
    EXPECT_EQ(of_export.at("snapshot").at("peak_reserved_bytes"), of_run.at("snapshot").at("peak_reserved_bytes"));
  }
  for (const nlohmann::json& row : of_run.at("heuristics")) EXPECT_EQ(row.at("overlap"), "ok") << row;
}

TEST_F(ExportCommand, TheFileReadsBackToTheRunsTrace) {
  exported("trace.pickle");
  const SnapshotTrace of_run = snapshot_trace(run_snapshot(run()), run().string());
  const SnapshotTrace of_file = read_snapshot_trace(read_file_bytes(file("trace.pickle").string()), "trace.pickle");
  ASSERT_FALSE(of_run.trace.empty());
  testing::expect_same_snapshot_trace(of_file, of_run, "the export");
  EXPECT_EQ(of_file.live_at_start, 0u) << "the set-up placement is in the trace";
  // The blocks are the tensors: their frames name them, and each
  // iteration's tensor has the id the first gave it (smartpool learns it).
  std::size_t conv1 = 0;
  for (const std::string& label : of_file.stack_labels)
    conv1 += label.rfind("activation:", 0) == 0 && label.size() > 6 && label.substr(label.size() - 6) == ":conv1";
  EXPECT_EQ(conv1, 1u) << "conv1's output: role, tensor id, name";
  std::map<int, std::set<std::int64_t>> ids_of_stack;
  for (std::size_t i = 0; i < of_file.trace.size(); ++i)
    if (of_file.trace[i].kind == TraceEvent::Kind::alloc) ids_of_stack[of_file.stack[i]].insert(of_file.trace[i].id);
  for (const auto& [stack, ids] : ids_of_stack) EXPECT_EQ(ids.size(), 1u) << of_file.stack_labels[static_cast<std::size_t>(stack)];

  // The run parked freed blocks: some frees were requested and completed later.
  const PyTorchSnapshot s = run_snapshot(run());
  std::size_t pending = 0;
  const auto& events = s.device_traces.at(0);
  for (std::size_t k = 0; k + 1 < events.size(); ++k)
    pending += events[k].action == SnapshotAction::free_requested &&
               !(events[k + 1].action == SnapshotAction::free_completed && events[k + 1].addr == events[k].addr);
  EXPECT_GT(pending, 0u);
  // One segment, the run's pool, tiled by its blocks as PyTorch's viewer reads them.
  ASSERT_EQ(s.segments.size(), 1u);
  std::uint64_t at = 0;
  for (const SnapshotBlock& b : s.segments[0].blocks) {
    EXPECT_EQ(b.address, at);
    at += b.size;
  }
  EXPECT_EQ(at, s.segments[0].total_size);
}

TEST_F(ExportCommand, RefusesToOverwriteAFileUnlessForced) {
  const fs::path mine = file("mine.pickle");
  testing::write_text(mine, "my data");
  std::ostringstream out;
  try {
    export_command({run(), mine, false}, out);
    FAIL() << "overwritten";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(mine.string() + " exists; export does not overwrite a file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file_bytes(mine.string()), "my data");
  EXPECT_EQ(export_command({run(), mine, true}, out), 0);
  EXPECT_EQ(trace_file_format(read_file_bytes(mine.string())), TraceFileFormat::pickle);

  // The binary says so and exits non-zero, leaving the file as it was.
  testing::write_text(mine, "my data");
  const testing::CommandResult r = testing::run_command(std::string(TIDEPOOL_BINARY) + " export " + run().string() +
                                                        " --pytorch-snapshot " + mine.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("give another name, or --force to replace it"), std::string::npos) << r.output;
  EXPECT_EQ(read_file_bytes(mine.string()), "my data");
}

TEST_F(ExportCommand, RefusesAFolderThatIsNotARunAndARunWithoutTracedIterations) {
  std::ostringstream out;
  fs::create_directories(file("data"));
  try {
    export_command({file("data"), file("data.pickle"), false}, out);
    FAIL() << "exported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("data is not a Tidepool run folder: no events.bin"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(file("data.pickle")));

  const testing::CommandResult untraced = testing::run_command(train(file("untraced"), 0));
  ASSERT_EQ(untraced.status, 0) << untraced.output;
  for (const std::string& command : {"export " + file("untraced").string() + " --pytorch-snapshot " +
                                        file("untraced.pickle").string(),
                                    "replay " + file("untraced").string()}) {
    const testing::CommandResult r = testing::run_command(std::string(TIDEPOOL_BINARY) + " " + command);
    EXPECT_EQ(r.status, 1) << command;
    EXPECT_NE(r.output.find("holds no traced iteration"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(file("untraced.pickle")));
}

}  // namespace
}  // namespace tidepool::app
