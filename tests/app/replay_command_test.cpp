// `tidepool replay FILE`: one row per heuristic, clear errors for bad files.
#include "app/commands/replay_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "engine/memory/allocator.h"
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

}  // namespace
}  // namespace tidepool::app
