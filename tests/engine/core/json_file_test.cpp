// JSON files a user hands us or a run leaves (engine/core/json_file.h):
// what is written reads back exactly; a write replaces the file whole, by
// renaming a finished temporary file over it, and leaves no temporary
// behind; and a file that cannot be read or is not JSON is refused with its
// path and what is wrong, never read as something else.
#include "engine/core/json_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>

#include "testing/temp_dir.h"

namespace tidepool {
namespace {

using testing::TempDir;

// The message of the runtime_error `f` throws ("" if it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string read_file(const std::filesystem::path& p) {
  const std::vector<std::uint8_t> bytes = testing::read_bytes(p);
  return {bytes.begin(), bytes.end()};
}

TEST(JsonFile, WhatIsWrittenReadsBackExactly) {
  TempDir dir("json-file");
  const std::string path = (dir / "summary.json").string();
  nlohmann::json j;
  j["name"] = "résumé \"quoted\"\nnext line\ttab \\ back";
  j["doubles"] = {0.1, 1.0 / 3.0, 1e-300, 6.02214076e23, -2.5, 0.0};
  j["int64"] = {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  j["uint64"] = std::numeric_limits<std::uint64_t>::max();
  j["flags"] = {true, false, nullptr};
  j["nested"]["empty_object"] = nlohmann::json::object();
  j["nested"]["empty_array"] = nlohmann::json::array();
  j["nested"]["rows"] = {{{"budget", 1u << 30}, {"mode", "all"}}, {{"budget", 0}, {"mode", "base"}}};
  write_json_atomically(path, j);
  const nlohmann::json back = read_json_file(path);
  EXPECT_EQ(back, j);  // doubles compare exactly: they round-trip
  EXPECT_EQ(back["doubles"][0].get<double>(), 0.1);
  EXPECT_EQ(back["uint64"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp")) << "the temporary file was renamed, not left";
}

TEST(JsonFile, AWriteReplacesTheFileWholeByRenamingOverIt) {
  TempDir dir("json-file");
  const std::filesystem::path path = dir / "summary.json";
  write_json_atomically(path.string(), {{"long", std::string(4000, 'x')}});
  // A second name for the first file: a write in place would change what
  // it reads; a rename gives the path a new file and leaves the old one
  // whole, as a reader that opened it before sees it.
  const std::filesystem::path earlier = dir / "earlier.json";
  std::filesystem::create_hard_link(path, earlier);
  const std::string before = read_file(earlier);
  write_json_atomically(path.string(), {{"short", 1}});
  EXPECT_EQ(read_file(earlier), before) << "the old file was written over in place";
  EXPECT_EQ(read_json_file(path.string()), (nlohmann::json{{"short", 1}})) << "no tail of the longer old file";
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));
}

TEST(JsonFile, AWriteThatCannotHappenNamesTheFileAndLeavesNothing) {
  TempDir dir("json-file");
  const std::string path = (dir / "no-such-folder" / "summary.json").string();
  const std::string said = error_of([&] { write_json_atomically(path, {{"a", 1}}); });
  EXPECT_NE(said.find(path), std::string::npos) << said;
  EXPECT_FALSE(std::filesystem::exists(dir / "no-such-folder"));
}

TEST(JsonFile, AMissingFileIsRefusedNamingIt) {
  TempDir dir("json-file");
  const std::string path = (dir / "absent.json").string();
  EXPECT_EQ(error_of([&] { read_json_file(path); }), path + ": cannot read it (no such file)");
}

// A folder opens as a stream and fails on the first read, with the
// stream's own message, which names no file: the path goes in front.
TEST(JsonFile, AFolderIsRefusedNamingIt) {
  TempDir dir("json-file");
  const std::string path = (dir / "choices.json").string();
  std::filesystem::create_directories(path);
  const std::string said = error_of([&] { read_json_file(path); });
  EXPECT_TRUE(starts_with(said, path + ": cannot read it (")) << said;
  EXPECT_NE(said.find("directory"), std::string::npos) << said;
}

// Not JSON, each refused with the path, "not JSON" and the parser's
// reason, which says where: a truncated file (what a kill during a write
// in place would leave), a missing value, trailing text after the value,
// an empty file, a comment.
TEST(JsonFile, MalformedFilesAreRefusedNamingTheFileAndWhere) {
  TempDir dir("json-file");
  struct Case {
    const char* name;
    const char* text;
    const char* where;  // in the parser's reason
  };
  const Case cases[] = {
      {"truncated.json", "{\"a\": [1, 2", "line 1"},
      {"missing-value.json", "{\"a\": 1,\n \"b\": }", "line 2"},
      {"trailing.json", "{\"a\": 1}\nextra", "line 2"},
      {"empty.json", "", "line 1"},
      {"comment.json", "// settings\n{}", "line 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = (dir / c.name).string();
    testing::write_text(path, c.text);
    const std::string said = error_of([&] { read_json_file(path); });
    EXPECT_TRUE(starts_with(said, path + ": not JSON (")) << said;
    EXPECT_NE(said.find("parse error"), std::string::npos) << said;
    EXPECT_NE(said.find(c.where), std::string::npos) << said;
  }
}

}  // namespace
}  // namespace tidepool
