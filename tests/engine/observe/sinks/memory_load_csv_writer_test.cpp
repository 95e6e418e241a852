#include "engine/observe/sinks/memory_load_csv_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace tidepool {
namespace {

using testing::TempDir;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(MemoryLoadCsvWriter, WritesHeaderAndOneRowPerSample) {
  const TempDir dir("csv");
  const std::string path = (dir / "load.csv").string();
  {
    MemoryLoadCsvWriter writer(path);
    LoadSample s;
    s.iteration = 2;
    s.step = 5;
    s.time_us = 1234.5;
    s.load_bytes = 1048576;
    s.extent_bytes = 2097152;
    writer.on_load(s);
    s.step = 6;
    s.time_us = 1300;
    s.load_bytes = 0;
    writer.on_load(s);
    // Other events are not this writer's business.
    writer.on_span(SpanEvent{});
    writer.flush();
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "iteration,step,time_us,load_bytes,extent_bytes");
  EXPECT_EQ(lines[1], "2,5,1234.500,1048576,2097152");
  EXPECT_EQ(lines[2], "2,6,1300.000,0,2097152");
}

TEST(MemoryLoadCsvWriter, EmptyRunHasOnlyTheHeader) {
  const TempDir dir("csv");
  const std::string path = (dir / "load.csv").string();
  { MemoryLoadCsvWriter writer(path); }  // the destructor closes the file
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], MemoryLoadCsvWriter::kHeader);
}

TEST(MemoryLoadCsvWriter, UnwritablePathThrowsNamingIt) {
  const std::string path = "/nonexistent-tidepool-dir/load.csv";
  try {
    MemoryLoadCsvWriter writer(path);
    FAIL() << "opening " << path << " did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tidepool
