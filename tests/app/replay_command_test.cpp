// `tidepool replay FILE`: one row per heuristic, clear errors for bad files.
#include "app/commands/replay_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/bytes_text.h"
#include "engine/memory/allocator.h"
#include "testing/examples.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"

namespace tidepool::app {
namespace {

using testing::TempDir;

// `text` as a trace file in `dir`; its path.
std::string trace_file(const TempDir& dir, const std::string& text) {
  const std::filesystem::path path = dir / "trace.csv";
  testing::write_text(path, text);
  return path.string();
}

// Two iterations of a small forward/backward sequence with an offloaded
// block, ids reused per iteration (so smartpool can learn it).
std::string two_iterations() {
  std::string text = "event,id,bytes,offload\nalloc,0,4096,0\n";  // a parameter
  for (int it = 0; it < 2; ++it)
    text +=
        "alloc,1,20000,1\nalloc,2,3000,0\nalloc,3,9000,0\nfree,2,,\nalloc,4,12000,0\nfree,1,,\n"
        "alloc,5,9000,0\nfree,3,,\nfree,4,,\nalloc,6,20000,0\nfree,5,,\nfree,6,,\n";
  return text;
}

TEST(ReplayCommand, PrintsOneRowPerHeuristic) {
  const TempDir dir("replay");
  const std::string trace = trace_file(dir, two_iterations());
  std::ostringstream out;
  EXPECT_EQ(replay_command({trace}, out), 0);
  const std::string text = out.str();
  EXPECT_NE(text.find("25 events (13 allocs, 12 frees)"), std::string::npos) << text;
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line))
    for (const std::string& name : allocator_names())
      if (line.rfind(name + " ", 0) == 0) rows.push_back(name);
  EXPECT_EQ(rows, allocator_names()) << text;
  for (const char* column : {"peak load", "footprint", "ratio", "free at peak", "pool search", "overlap"})
    EXPECT_NE(text.find(column), std::string::npos) << column;
  // Every row passed the overlap check; exact's ratio is 1 by definition.
  std::size_t oks = 0;
  for (std::size_t at = text.find(" ok\n"); at != std::string::npos; at = text.find(" ok\n", at + 1)) ++oks;
  EXPECT_EQ(oks, allocator_names().size());
  const std::size_t exact = text.find("\nexact ");
  ASSERT_NE(exact, std::string::npos);
  EXPECT_NE(text.substr(exact, text.find('\n', exact + 1) - exact).find("1.0000"), std::string::npos) << text;
  // high-end puts the offloaded block at the top of the pool: its row
  // shows the searched pool, marked.
  EXPECT_NE(text.find("* places blocks at the top"), std::string::npos) << text;
}

TEST(ReplayCommand, ABadFileIsAnInvalidArgumentNamingFileAndLine) {
  const TempDir dir("replay");
  const std::string trace = trace_file(dir, "event,id,bytes,offload\nalloc,0,256,0\nfree,3,,\n");
  std::ostringstream out;
  try {
    replay_command({trace}, out);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(trace + ":3:"), std::string::npos) << message;
    EXPECT_NE(message.find("free of id 3, which is not live"), std::string::npos) << message;
  }
  EXPECT_THROW(replay_command({"/nonexistent/trace.csv"}, out), std::invalid_argument);
}

TEST(ReplayCommand, AnEmptyTraceNeedsNothing) {
  const TempDir dir("replay");
  const std::string trace = trace_file(dir, "event,id,bytes\n");
  std::ostringstream out;
  EXPECT_EQ(replay_command({trace}, out), 0);
  EXPECT_NE(out.str().find("0 events"), std::string::npos) << out.str();
}

using testing::example_path;

TEST(ReplayCommand, APyTorchSnapshotPrintsItsOwnFiguresThenTheTable) {
  std::ostringstream out;
  EXPECT_EQ(replay_command({example_path("resnet_snapshot.pickle")}, out), 0);
  const std::string text = out.str();
  EXPECT_NE(text.find("resnet_snapshot.pickle (pickle): device 0 of 1, 200 trace entries: "), std::string::npos) << text;
  EXPECT_NE(text.find("of the allocs live at the trace's start, 2 streams, peak load "), std::string::npos) << text;
  EXPECT_NE(text.find("PyTorch's allocator in the trace: peak reserved 66.0 MiB (69206016 B; 26.0 MiB at the trace's "
                      "start, 2 segment events), peak requested "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("no out-of-memory in the trace\n"), std::string::npos) << text;
  for (const std::string& name : allocator_names()) EXPECT_NE(text.find("\n" + name + " "), std::string::npos) << name;

  std::ostringstream json_out;
  EXPECT_EQ(replay_command({example_path("resnet_snapshot.json")}, json_out), 0);
  // The JSON form reads to the same trace: the same table under another first line.
  EXPECT_EQ(json_out.str().substr(json_out.str().find("PyTorch's allocator")), text.substr(text.find("PyTorch's allocator")));
}

TEST(ReplayCommand, ASnapshotsOomIsShownWhereItHappened) {
  std::ostringstream out;
  EXPECT_EQ(replay_command({example_path("oom_snapshot.pickle")}, out), 0);
  EXPECT_NE(out.str().find("out of memory at device_traces[0]["), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("asked 16.0 MiB (16777216 B) on stream "), std::string::npos) << out.str();
}

TEST(ReplayCommand, JsonGivesOneObjectPerHeuristic) {
  std::ostringstream out;
  EXPECT_EQ(replay_command({example_path("oom_snapshot.pickle"), std::nullopt, true}, out), 0);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("format"), "pickle");
  EXPECT_EQ(j.at("snapshot").at("ooms").size(), 1u);
  ASSERT_EQ(j.at("heuristics").size(), allocator_names().size());
  for (const nlohmann::json& row : j.at("heuristics")) {
    EXPECT_EQ(row.at("overlap"), "ok");
    EXPECT_EQ(row.at("peak_load_bytes"), j.at("peak_load_bytes"));
    EXPECT_GE(row.at("footprint_bytes").get<std::size_t>(), row.at("peak_load_bytes").get<std::size_t>());
    for (const char* key : {"competitive_ratio", "largest_free_at_peak_bytes", "pool_search_bytes", "pool_search_restarts"})
      EXPECT_TRUE(row.contains(key)) << key;
  }
}

TEST(ReplayCommand, TheBinaryReadsSnapshotsAndRefusesBadOnesWithAClearMessage) {
  const std::string tidepool = TIDEPOOL_BINARY;
  const testing::CommandResult ok = testing::run_command(tidepool + " replay " + example_path("resnet_snapshot_p2.pickle") +
                                                         " --device-index 0");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("device 0 of 1"), std::string::npos) << ok.output;

  const TempDir dir("replay");
  const std::filesystem::path evil = dir / "evil.pickle";
  using namespace std::string_literals;
  testing::write_text(evil, "\x80\x02" "cposix\nsystem\nq\x00X\x02\x00\x00\x00" "lsq\x01\x85q\x02Rq\x03."s);
  const testing::CommandResult refused = testing::run_command(tidepool + " replay " + evil.string());
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find(evil.string() + ": byte 2: opcode GLOBAL (0x63) would run code"), std::string::npos)
      << refused.output;

  const testing::CommandResult no_device =
      testing::run_command(tidepool + " replay " + example_path("resnet_snapshot.json") + " --device-index 3");
  EXPECT_NE(no_device.status, 0);
  EXPECT_NE(no_device.output.find("there is no device 3"), std::string::npos) << no_device.output;

  const std::string csv = trace_file(dir, "event,id,bytes\nalloc,1,256\n");
  const testing::CommandResult csv_device = testing::run_command(tidepool + " replay " + csv + " --device-index 0");
  EXPECT_NE(csv_device.status, 0);
  EXPECT_NE(csv_device.output.find("--device-index picks a device of a PyTorch snapshot; this is a CSV trace"),
            std::string::npos)
      << csv_device.output;
}

TEST(ReplayCommand, ABudgetSaysWhichHeuristicsFitItAndWhereTheOthersFail) {
  // best-fit's pool search says what it needs.
  const std::string file = testing::example_path("two_stream_snapshot.pickle");
  std::ostringstream plain;
  ASSERT_EQ(replay_command({file, std::nullopt, true}, plain), 0);
  const nlohmann::json all = nlohmann::json::parse(plain.str());
  std::size_t best_fit = 0, pytorch = 0;
  for (const nlohmann::json& row : all.at("heuristics")) {
    EXPECT_FALSE(row.contains("fits_budget")) << "no budget asked";
    if (row.at("heuristic") == "best-fit") best_fit = row.at("pool_search_bytes");
    if (row.at("heuristic") == "pytorch") pytorch = row.at("pool_search_bytes");
  }
  ASSERT_LT(best_fit, pytorch) << "pytorch reserves whole segments";

  // best-fit's pool: best-fit fits, pytorch does not, and says where it fails.
  ReplayRequest q{file, std::nullopt, true};
  q.budget_bytes = best_fit;
  std::ostringstream out;
  ASSERT_EQ(replay_command(q, out), 0);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("budget_bytes"), best_fit);
  for (const nlohmann::json& row : j.at("heuristics")) {
    if (row.at("heuristic") == "best-fit") EXPECT_TRUE(row.at("fits_budget"));
    if (row.at("heuristic") == "pytorch") {
      EXPECT_FALSE(row.at("fits_budget"));
      EXPECT_GE(row.at("budget_failed_event").get<int>(), 0);
    }
  }
  // The same in text.
  q.json = false;
  std::ostringstream text;
  ASSERT_EQ(replay_command(q, text), 0);
  EXPECT_NE(text.str().find("in a budget of " + format_bytes(best_fit) + ": "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("best-fit fits"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("pytorch does not fit (event "), std::string::npos) << text.str();
}

}  // namespace
}  // namespace tidepool::app
