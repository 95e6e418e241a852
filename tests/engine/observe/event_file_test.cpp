// events.bin: what EventFileWriter writes, EventFile reads back event for
// event, in order; and every way a file can be refused (not one, a newer
// version, truncated anywhere, corrupt) says so naming the file.
#include "engine/observe/event_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "engine/observe/sinks/event_file_writer.h"
#include "engine/observe/sinks/ring_sink.h"
#include "testing/recorder.h"
#include "testing/sample_events.h"
#include "testing/temp_dir.h"

namespace tidepool {
namespace {

namespace fs = std::filesystem;
using testing::read_bytes;
using testing::Recorder;
using Event = testing::RecordedEvent;
using testing::run_events;
using testing::send;
using testing::numbered;

class EventFileTest : public ::testing::Test {
 protected:
  // Writes `events` to a file and flushes it.
  fs::path write(const std::vector<Event>& events, const std::string& name = "events.bin") {
    const fs::path path = dir_.path() / name;
    EventFileWriter writer(path.string());
    for (const Event& e : events) send(writer, e);
    writer.flush();
    return path;
  }
  // A file of these bytes in the test's folder.
  fs::path with_bytes(const std::vector<unsigned char>& b, const std::string& name) {
    const fs::path path = dir_ / name;
    testing::write_bytes(path, b);
    return path;
  }
  // Why the file is refused ("" when it is read).
  static std::string refusal(const fs::path& path) {
    try {
      EventFile file(path);
      return "";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  }
  testing::TempDir dir_{"event_file"};
};

TEST_F(EventFileTest, RoundTripGivesBackEveryEventInOrder) {
  const std::vector<Event> events = run_events(3);
  const fs::path path = write(events);
  const EventFile file(path);
  Recorder back;
  file.replay(back);
  ASSERT_EQ(back.events.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) EXPECT_TRUE(back.events[i] == events[i]) << "event " << i;

  const EventFileCounts& n = file.counts();
  EXPECT_EQ(n.spans, 27u);
  EXPECT_EQ(n.allocs, 4u + 27u);
  EXPECT_EQ(n.loads, 27u);
  EXPECT_EQ(n.iterations, 3u);
  EXPECT_EQ(n.events(), events.size());
  // Every name once: the placement's four, layer0..2, "", the five
  // transfers' tensors, t0..2.
  EXPECT_EQ(n.strings, 4u + 3u + 1u + 5u + 3u);
  // A file replays any number of times, the same each time.
  Recorder again;
  file.replay(again);
  EXPECT_EQ(again.events, back.events);
}

TEST_F(EventFileTest, RecordsHaveTheirDocumentedSizes) {
  // One event of each kind, all with the same name: header, one string
  // record, four records and the end record.
  const std::vector<Event> one = {SpanEvent{.layer = "x", .tensor = "x"}, AllocEvent{.name = "x"}, LoadSample{},
                                  IterationSummary{}};
  const fs::path path = write(one);
  EXPECT_EQ(fs::file_size(path), event_file::kHeaderBytes + (1 + 4 + 1) + (1 + event_file::kSpanBytes) +
                                     (1 + event_file::kAllocBytes) + (1 + event_file::kLoadBytes) +
                                     (1 + event_file::kIterationBytes) + (1 + event_file::kEndBytes));
  const std::vector<unsigned char> b = read_bytes(path);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "TPEVENTS");
  EXPECT_EQ(b[8], event_file::kVersion);
}

TEST_F(EventFileTest, ARingFilledFromTheFileHoldsWhatTheRunSent) {
  const std::vector<Event> events = run_events(4);
  RingSink live;
  for (const Event& e : events) send(live, e);
  RingSink recorded;
  replay_event_file(write(events), recorded);
  const RingSnapshot a = live.snapshot(), b = recorded.snapshot();
  EXPECT_EQ(b.placement, a.placement);
  EXPECT_EQ(b.placement.size(), 4u);
  EXPECT_EQ(b.spans, a.spans);
  EXPECT_EQ(b.allocs, a.allocs);
  EXPECT_EQ(b.loads, a.loads);
  EXPECT_EQ(b.iterations, a.iterations);
}

TEST_F(EventFileTest, AnEmptyRunIsAValidFile) {
  const EventFile file(write({}));
  EXPECT_EQ(file.counts(), EventFileCounts{});
}

TEST_F(EventFileTest, EventsAfterFlushAreIgnored) {
  const fs::path path = dir_.path() / "late.bin";
  EventFileWriter writer(path.string());
  writer.on_load(LoadSample{.step = 1});
  writer.flush();
  writer.on_load(LoadSample{.step = 2});
  writer.flush();
  EXPECT_EQ(EventFile(path).counts().loads, 1u);
}

TEST_F(EventFileTest, AWriterThatCannotOpenItsFileNamesIt) {
  try {
    EventFileWriter writer((dir_.path() / "no_such_folder" / "events.bin").string());
    FAIL() << "opened a file in a folder that does not exist";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_folder"), std::string::npos) << e.what();
  }
}

TEST_F(EventFileTest, AMissingFileIsNamed) {
  const std::string why = refusal(dir_.path() / "absent.bin");
  EXPECT_NE(why.find("absent.bin"), std::string::npos) << why;
  EXPECT_NE(why.find("no such file"), std::string::npos) << why;
}

TEST_F(EventFileTest, AnotherKindOfFileIsNotAnEventsFile) {
  const std::string text = "{\"traceEvents\":[]}\n";
  const fs::path path = with_bytes({text.begin(), text.end()}, "trace.json");
  const std::string why = refusal(path);
  EXPECT_NE(why.find(path.string()), std::string::npos) << why;
  EXPECT_NE(why.find("is not a Tidepool events file"), std::string::npos) << why;
}

TEST_F(EventFileTest, ANewerVersionIsRefusedAsSuch) {
  std::vector<unsigned char> b = read_bytes(write(run_events(1)));
  b[8] = event_file::kVersion + 1;
  const fs::path path = with_bytes(b, "newer.bin");
  const std::string why = refusal(path);
  EXPECT_NE(why.find(path.string()), std::string::npos) << why;
  EXPECT_NE(why.find("version 2, newer than this tidepool reads"), std::string::npos) << why;
}

TEST_F(EventFileTest, AFileCutAnywhereIsTruncated) {
  const std::vector<unsigned char> whole = read_bytes(write(run_events(2)));
  const std::size_t n = whole.size();
  // Inside the magic, inside the header, right after it, inside a string
  // record, inside an event record, on a record boundary, without the end
  // record and inside it.
  for (const std::size_t cut : {std::size_t{0}, std::size_t{5}, std::size_t{12}, std::size_t{16}, std::size_t{19},
                                n / 2, n / 2 + 1, n - 1 - event_file::kEndBytes, n - 20, n - 1}) {
    const fs::path path =
        with_bytes({whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)}, numbered("cut", static_cast<int>(cut)));
    const std::string why = refusal(path);
    EXPECT_NE(why.find(path.string() + " is truncated"), std::string::npos) << "cut at " << cut << ": " << why;
  }
}

TEST_F(EventFileTest, AWriterDestroyedBeforeFlushLeavesATruncatedFile) {
  const fs::path path = dir_.path() / "killed.bin";
  {
    EventFileWriter writer(path.string());
    for (const Event& e : run_events(1)) send(writer, e);
  }  // the run ended without finishing: no end record
  const std::string why = refusal(path);
  EXPECT_NE(why.find("is truncated"), std::string::npos) << why;
  EXPECT_NE(why.find("without the end record"), std::string::npos) << why;
}

TEST_F(EventFileTest, DamageIsCorrupt) {
  const std::vector<unsigned char> whole = read_bytes(write(run_events(2)));
  auto damaged = [&](std::size_t at, unsigned char value, const std::string& name) {
    std::vector<unsigned char> b = whole;
    b[at] = value;
    return refusal(with_bytes(b, name));
  };
  // A bit flipped inside the last iteration's loss (the iteration record
  // ends where the end record begins; loss and accuracy are its last 8
  // bytes): only the checksum tells.
  const std::size_t loss = whole.size() - (1 + event_file::kEndBytes) - 8;
  const std::string flipped = damaged(loss, whole[loss] ^ 0x10, "flipped.bin");
  EXPECT_NE(flipped.find("is corrupt: its checksum does not match"), std::string::npos) << flipped;
  // The checksum itself.
  const std::string sum = damaged(whole.size() - 1, whole.back() ^ 1, "sum.bin");
  EXPECT_NE(sum.find("is corrupt"), std::string::npos) << sum;
  // A record type that does not exist (the first record follows the header).
  const std::string type = damaged(event_file::kHeaderBytes, 77, "type.bin");
  EXPECT_NE(type.find("is corrupt: unknown record type 77 at byte 16"), std::string::npos) << type;
  // Bytes after the end record.
  std::vector<unsigned char> longer = whole;
  longer.push_back(0);
  const std::string trailing = refusal(with_bytes(longer, "trailing.bin"));
  EXPECT_NE(trailing.find("is corrupt: 1 bytes follow the end record"), std::string::npos) << trailing;
}

TEST_F(EventFileTest, AnEnumOutOfRangeOrAnUndefinedStringIsCorrupt) {
  // Header, the string "a" (6 bytes), then the span: its kind is byte
  // 16 + 6 + 1 + 8 + 4 + 1 = 36, its layer's string id bytes 37-40.
  const std::vector<unsigned char> whole = read_bytes(write({SpanEvent{.layer = "a", .tensor = "a"}}));
  std::vector<unsigned char> kind = whole;
  kind[36] = 99;
  const std::string why_kind = refusal(with_bytes(kind, "kind.bin"));
  EXPECT_NE(why_kind.find("is corrupt: span kind 99"), std::string::npos) << why_kind;
  std::vector<unsigned char> id = whole;
  id[37] = 5;
  const std::string why_id = refusal(with_bytes(id, "id.bin"));
  EXPECT_NE(why_id.find("names string 5 of 1 defined before it"), std::string::npos) << why_id;
}

}  // namespace
}  // namespace tidepool
