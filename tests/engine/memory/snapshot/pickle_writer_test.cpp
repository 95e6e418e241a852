// The pickle writer: what it writes our reader and Python's pickle.loads
// read back to the same data (the example snapshots, every integer width,
// shared containers), and what it refuses.
#include "engine/memory/snapshot/pickle_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "engine/core/file_bytes.h"
#include "engine/memory/snapshot/pickle_reader.h"
#include "engine/memory/snapshot/pytorch_snapshot.h"
#include "testing/examples.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"

namespace tidepool {
namespace {

using namespace std::string_literals;
using Value = PlainData::Value;
using Kind = PlainData::Kind;

nlohmann::json json_of(const PlainData& d) { return plain_data_json(d, "t"); }

TEST(PickleWriter, TheExampleSnapshotsReadBackToTheSameData) {
  for (const char* name : {"resnet_snapshot.pickle", "resnet_snapshot_p2.pickle", "oom_snapshot.pickle",
                           "two_stream_snapshot.pickle"}) {
    const PlainData original = read_pickle(read_file_bytes(testing::example_path(name)), name);
    const std::string written = write_pickle(original);
    const PlainData again = read_pickle(written, "written");
    EXPECT_EQ(json_of(again), json_of(original)) << name;
    // Shared frames lists stay shared: as many containers, not the expanded tree's.
    EXPECT_EQ(again.containers(), original.containers()) << name;
  }
}

TEST(PickleWriter, IntegersOfEveryWidth) {
  PlainData d;
  const Value list = d.add_container(Kind::list);
  const std::int64_t signed_values[] = {0, 255, 256, 65535, 65536, -1, INT32_MIN, INT32_MAX, std::int64_t{INT32_MAX} + 1,
                                        std::int64_t{INT32_MIN} - 1, INT64_MIN, INT64_MAX, std::int64_t{1} << 40};
  for (const std::int64_t v : signed_values) d.append(list, Value::of_int(v));
  d.append(list, Value::of_uint(UINT64_MAX));
  d.append(list, Value::of_uint(std::uint64_t{1} << 63));
  d.set_root(list);
  const nlohmann::json back = json_of(read_pickle(write_pickle(d), "t"));
  ASSERT_EQ(back.size(), std::size(signed_values) + 2);
  for (std::size_t i = 0; i < std::size(signed_values); ++i) EXPECT_EQ(back[i].get<std::int64_t>(), signed_values[i]) << i;
  EXPECT_EQ(back[std::size(signed_values)].get<std::uint64_t>(), UINT64_MAX);
  EXPECT_EQ(back[std::size(signed_values) + 1].get<std::uint64_t>(), std::uint64_t{1} << 63);

  // The opcodes Python's pickler picks (pickle.dumps(v, 4) less its FRAME).
  const auto pickle_of = [](const Value& v) {
    PlainData one;
    one.set_root(v);
    return write_pickle(one);
  };
  EXPECT_EQ(pickle_of(Value::of_int(5)), "\x80\x04K\x05."s);                                   // BININT1
  EXPECT_EQ(pickle_of(Value::of_int(0x1234)), "\x80\x04M\x34\x12."s);                          // BININT2
  EXPECT_EQ(pickle_of(Value::of_int(-1)), "\x80\x04J\xff\xff\xff\xff."s);                      // BININT
  EXPECT_EQ(pickle_of(Value::of_int(std::int64_t{1} << 32)), "\x80\x04\x8a\x05\x00\x00\x00\x00\x01."s);  // LONG1
  EXPECT_EQ(pickle_of(Value::of_int(-(std::int64_t{1} << 31) - 1)), "\x80\x04\x8a\x05\xff\xff\xff\x7f\xff."s);
  EXPECT_EQ(pickle_of(Value::of_uint(UINT64_MAX)), "\x80\x04\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00."s);
}

TEST(PickleWriter, ASharedContainerIsWrittenOnceAndReadBackShared) {
  PlainData d;
  const Value frames = d.add_container(Kind::list, {d.add_string("train.py", Kind::string)});
  const Value root = d.add_container(Kind::list, {frames, frames, frames});
  d.set_root(root);
  const std::string bytes = write_pickle(d);
  EXPECT_EQ(bytes.find("train.py"), bytes.rfind("train.py")) << "the string is written once";
  const PlainData back = read_pickle(bytes, "t");
  ASSERT_EQ(back.items(back.root()).size(), 3u);
  EXPECT_EQ(back.items(back.root())[0].ref, back.items(back.root())[2].ref);
  EXPECT_EQ(back.containers(), 2u);
}

TEST(PickleWriter, RefusesAContainerThatContainsItself) {
  PlainData d;
  const Value list = d.add_container(Kind::list);
  d.append(list, list);
  d.set_root(list);
  try {
    write_pickle(d);
    FAIL() << "written";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write this data as a pickle: a container that contains itself"),
              std::string::npos)
        << e.what();
  }
}

// Python's own unpickler reads what we write to the data our reader reads
// (where python3 is installed: the build needs it, a bare test machine may not).
TEST(PickleWriter, PythonsPickleLoadsReadsTheSameData) {
  if (testing::run_command("python3 -c 'import pickle, json'").status != 0) GTEST_SKIP() << "no python3";
  const testing::TempDir dir("pickle_writer");
  for (const char* name : {"resnet_snapshot.pickle", "oom_snapshot.pickle"}) {
    const PlainData original = read_pickle(read_file_bytes(testing::example_path(name)), name);
    const std::filesystem::path file = dir / "written.pickle";
    write_file_atomically(file.string(), write_pickle(original));
    const testing::CommandResult python = testing::run_command(
        "python3 -c 'import pickle, json, sys; print(json.dumps(pickle.load(open(sys.argv[1], \"rb\"))))' " +
        file.string());
    ASSERT_EQ(python.status, 0) << python.output;
    EXPECT_EQ(nlohmann::json::parse(python.output), json_of(original)) << name;
  }
}

// snapshot_data writes the example snapshots' own fields as PyTorch wrote
// them (the examples follow PyTorch's structure exactly), and reads back to
// the snapshot it was made from.
TEST(SnapshotData, WritesWhatPyTorchWritesAndReadsBack) {
  for (const char* name : {"two_stream_snapshot.pickle", "oom_snapshot.pickle"}) {
    const nlohmann::json file = read_pickle_json(read_file_bytes(testing::example_path(name)), name);
    const PyTorchSnapshot original = read_pytorch_snapshot(read_pickle(read_file_bytes(testing::example_path(name)), name), name);
    const nlohmann::json written = plain_data_json(snapshot_data(original), name);
    // A failure shows the JSON patch between them, not two whole traces.
    EXPECT_TRUE(written.at("device_traces") == file.at("device_traces"))
        << name << ": " << nlohmann::json::diff(file.at("device_traces"), written.at("device_traces")).dump().substr(0, 2000);
    ASSERT_EQ(written.at("segments").size(), file.at("segments").size()) << name;
    for (std::size_t k = 0; k < file.at("segments").size(); ++k) {
      nlohmann::json theirs = file.at("segments")[k];
      theirs["frames"] = nlohmann::json::array();  // a segment's own frames are not kept (snapshot_data writes none)
      EXPECT_TRUE(written.at("segments")[k] == theirs)
          << name << " segment " << k << ": " << nlohmann::json::diff(theirs, written.at("segments")[k]).dump().substr(0, 2000);
    }
    const PyTorchSnapshot again = read_pytorch_snapshot(read_pickle(write_pickle(snapshot_data(original)), "w"), "w");
    EXPECT_EQ(plain_data_json(snapshot_data(again), "w"), written) << name;
    EXPECT_EQ(again.stacks, original.stacks) << name;
  }
}

}  // namespace
}  // namespace tidepool
