// PyTorch snapshots as traces: the examples (examples/make_snapshots.py)
// in their three forms, and small snapshots written here for each rule of
// engine/memory/snapshot/snapshot_trace.h.
#include "engine/memory/snapshot/snapshot_trace.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/memory/snapshot/snapshot_file.h"
#include "testing/examples.h"
#include "testing/snapshot_traces.h"

namespace tidepool {
namespace {

using namespace std::string_literals;
using nlohmann::json;

using testing::example_path;

SnapshotTrace read_example(const std::string& name) {
  const std::string path = example_path(name);
  return read_snapshot_trace(read_file_bytes(path), path);
}

SnapshotTrace of_json(const std::string& text, std::optional<int> device = std::nullopt) {
  return snapshot_trace(read_pytorch_snapshot(read_json_data(text, "s.json"), "s.json"), "s.json", device);
}

std::string refusal(const std::string& text, std::optional<int> device = std::nullopt) {
  try {
    of_json(text, device);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(read without an error)";
}

TEST(SnapshotTrace, TheResnetExampleStartsMidRunOnTwoStreamsWithUserLabels) {
  const SnapshotTrace t = read_example("resnet_snapshot.pickle");
  EXPECT_NO_THROW(validate(t.trace));
  EXPECT_EQ(t.entries, 200u);  // the ring buffer's size: the run's first entries fell off it
  EXPECT_GT(t.live_at_start, 0u);
  ASSERT_EQ(t.stream.size(), t.trace.size());
  ASSERT_EQ(t.stack.size(), t.trace.size());
  ASSERT_EQ(t.entry.size(), t.trace.size());
  for (std::size_t i = 0; i < t.live_at_start; ++i) {
    EXPECT_EQ(t.trace[i].kind, TraceEvent::Kind::alloc);
    EXPECT_EQ(t.entry[i], -1);
  }
  ASSERT_EQ(t.streams.size(), 2u);  // the compute stream and the copy stream
  EXPECT_EQ(t.streams[0], 0);
  bool on_copy_stream = false, forward_label = false;
  for (std::size_t i = 0; i < t.trace.size(); ++i) {
    on_copy_stream |= t.stream[i] == 1;
    const std::string& label = t.label(i);
    EXPECT_FALSE(label.empty()) << i;
    // The innermost user frame: never PyTorch's own module, the allocator's C++ frame or runpy.
    EXPECT_EQ(label.find("conv.py"), std::string::npos) << label;
    EXPECT_EQ(label.find("??"), std::string::npos) << label;
    EXPECT_EQ(label.find("runpy"), std::string::npos) << label;
    forward_label |= label == "model.py:70:forward";
  }
  EXPECT_TRUE(on_copy_stream);
  EXPECT_TRUE(forward_label);
  // Reserved: the segments at the end (3 small of 2 MiB, 3 large of 20 MiB) are where the sequence ends.
  ASSERT_FALSE(t.reserved.empty());
  EXPECT_EQ(t.reserved.back().reserved_bytes, 3u * (2u << 20) + 3u * (20u << 20));
  EXPECT_EQ(t.peak_reserved, t.reserved.back().reserved_bytes);
  EXPECT_LT(t.reserved_at_start, t.peak_reserved);
  EXPECT_TRUE(t.ooms.empty());
  EXPECT_GE(t.peak_reserved, t.peak_requested);
}

TEST(SnapshotTrace, PickleProtocolsAndJsonGiveTheSameTrace) {
  const SnapshotTrace p4 = read_example("resnet_snapshot.pickle");
  for (const char* other : {"resnet_snapshot_p2.pickle", "resnet_snapshot.json"}) {
    testing::expect_same_snapshot_trace(read_example(other), p4, other);
  }
}

TEST(SnapshotTrace, TheOomExampleKeepsWhereItHappened) {
  const SnapshotTrace t = read_example("oom_snapshot.pickle");
  EXPECT_NO_THROW(validate(t.trace));
  ASSERT_EQ(t.ooms.size(), 1u);
  EXPECT_EQ(t.ooms[0].bytes, 16u << 20);  // an activation of the 512-image batch
  EXPECT_LE(t.ooms[0].trace_events, t.trace.size());
  EXPECT_LE(t.peak_reserved, 120u << 20);  // the model's device
  // Before the oom the allocator gave its cached segments back and tried again.
  bool freed_segment = false;
  for (std::size_t k = 1; k < t.reserved.size(); ++k)
    if (t.reserved[k].entry < t.ooms[0].entry && t.reserved[k].reserved_bytes < t.reserved[k - 1].reserved_bytes)
      freed_segment = true;
  EXPECT_TRUE(freed_segment);
  EXPECT_EQ(t.live_at_start, 0u);  // the whole run fits its ring buffer
}

// A complete trace (its ring buffer held the whole run) starts with nothing
// reserved, so its segment events are PyTorch's reserved bytes from the
// first cudaMalloc: the sequence an allocator model can be checked
// against. A trace that starts mid-run (resnet_snapshot) starts from
// segments whose history it lacks, and only its later changes compare.
TEST(SnapshotTrace, CompleteExamplesStartWithNothingReserved) {
  for (const char* name : {"oom_snapshot.pickle", "two_stream_snapshot.pickle"}) {
    const SnapshotTrace t = read_example(name);
    EXPECT_NO_THROW(validate(t.trace)) << name;
    EXPECT_EQ(t.live_at_start, 0u) << name;
    EXPECT_EQ(t.reserved_at_start, 0u) << name;
    ASSERT_FALSE(t.reserved.empty()) << name;
    EXPECT_EQ(t.reserved.front().entry, 0u) << name;  // the run's first event is its first segment_alloc
  }
  const SnapshotTrace t = read_example("two_stream_snapshot.pickle");
  EXPECT_TRUE(t.ooms.empty());
  EXPECT_EQ(t.streams.size(), 2u);
  // empty_cache gave back the whole free segments: reserved fell at the end.
  ASSERT_GE(t.reserved.size(), 2u);
  EXPECT_LT(t.reserved.back().reserved_bytes, t.peak_reserved);
}

TEST(SnapshotTrace, FreesWithoutAnAllocWereLiveAtTheStartAndFramesLabelThem) {
  const SnapshotTrace t = of_json(R"({"device_traces": [[
      {"action": "free_requested", "addr": 4096, "size": 1000, "stream": 0},
      {"action": "free_completed", "addr": 4096, "size": 1000, "stream": 0,
       "frames": [{"filename": "/usr/lib/python3.11/contextlib.py", "line": 5, "name": "inner"},
                  {"filename": "/x/site-packages/torch/nn/functional.py", "line": 7, "name": "relu"},
                  {"filename": "/home/me/net.py", "line": 12, "name": "forward"}]},
      {"action": "alloc", "addr": 4096, "size": 3000, "stream": 7}]],
    "segments": [{"device": 0, "address": 0, "total_size": 2097152, "stream": 0, "segment_type": "small",
                  "blocks": [{"address": 4096, "size": 3072, "requested_size": 3000, "state": "active_allocated"},
                             {"address": 9999, "size": 512, "requested_size": 300, "state": "active_allocated"},
                             {"address": 20000, "size": 512, "requested_size": 0, "state": "inactive"}]}]})");
  // The free's block (its size from the free), the block live all along (from the segments), then the trace.
  ASSERT_EQ(t.trace.size(), 4u);
  EXPECT_EQ(t.live_at_start, 2u);
  EXPECT_EQ(t.trace[0].bytes, 1000u);
  EXPECT_EQ(t.trace[1].bytes, 300u);
  EXPECT_EQ(t.trace[2].kind, TraceEvent::Kind::free);
  EXPECT_EQ(t.trace[2].id, t.trace[0].id);
  EXPECT_EQ(t.trace[3].bytes, 3000u);
  EXPECT_NO_THROW(validate(t.trace));
  EXPECT_EQ(t.label(2), "net.py:12:forward");
  EXPECT_EQ(t.entry, (std::vector<std::int64_t>{-1, -1, 1, 2}));
  EXPECT_EQ(t.streams, (std::vector<std::int64_t>{0, 7}));
  EXPECT_EQ(t.stream, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(t.peak_requested, 3300u);
  EXPECT_EQ(t.reserved_at_start, 2097152u);  // no segment events: the segments held it all along

  // A block freed with no alloc carries the free's frames: its id is not
  // handed to a later alloc from those frames, which is another call site.
  const std::string here = R"([{"filename": "/home/me/net.py", "line": 12, "name": "forward"}])";
  const SnapshotTrace again = of_json(R"({"device_traces": [[
      {"action": "free_completed", "addr": 4096, "size": 1000, "stream": 0, "frames": )" + here + R"(},
      {"action": "alloc", "addr": 4096, "size": 1000, "stream": 0, "frames": )" + here + R"(}]]})");
  ASSERT_EQ(again.trace.size(), 3u);
  EXPECT_NE(again.trace[2].id, again.trace[0].id);
}

TEST(SnapshotTrace, FreesHappenAtFreeCompletedAndIdsRepeatPerCallSite) {
  const std::string frames = R"([{"filename": "train.py", "line": 3, "name": "step"}])";
  const SnapshotTrace t = of_json(R"({"device_traces": [[
      {"action": "alloc", "addr": 100, "size": 512, "stream": 0, "frames": )" + frames + R"(},
      {"action": "free_requested", "addr": 100, "size": 512, "stream": 0},
      {"action": "alloc", "addr": 200, "size": 512, "stream": 0, "frames": )" + frames + R"(},
      {"action": "free_completed", "addr": 100, "size": 512, "stream": 0},
      {"action": "free_requested", "addr": 200, "size": 512, "stream": 0},
      {"action": "free_completed", "addr": 200, "size": 512, "stream": 0},
      {"action": "alloc", "addr": 100, "size": 512, "stream": 0, "frames": )" + frames + R"(}]]})");
  ASSERT_EQ(t.trace.size(), 5u);
  EXPECT_EQ(t.trace[1].kind, TraceEvent::Kind::alloc);  // the first block is still held: its free completes after
  EXPECT_NE(t.trace[1].id, t.trace[0].id);
  EXPECT_EQ(t.trace[2].kind, TraceEvent::Kind::free);
  EXPECT_EQ(t.trace[4].id, t.trace[0].id);  // the same call site and size again: the same id
  EXPECT_EQ(t.entry, (std::vector<std::int64_t>{0, 2, 3, 5, 6}));

  // Recorded without free_completed (skip_actions): frees at free_requested.
  const SnapshotTrace r = of_json(R"({"device_traces": [[
      {"action": "alloc", "addr": 100, "size": 512, "stream": 0},
      {"action": "free_requested", "addr": 100, "size": 512, "stream": 0}]]})");
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[1].kind, TraceEvent::Kind::free);
}

TEST(SnapshotTrace, ReservedBytesFollowTheSegmentEvents) {
  const SnapshotTrace t = of_json(R"({"device_traces": [[
      {"action": "segment_alloc", "addr": 0, "size": 20971520, "stream": 0},
      {"action": "alloc", "addr": 0, "size": 5000000, "stream": 0},
      {"action": "segment_free", "addr": 33554432, "size": 2097152, "stream": 0},
      {"action": "oom", "size": 104857600, "stream": 0, "device_free": 1048576},
      {"action": "segment_map", "addr": 67108864, "size": 2097152, "stream": 0},
      {"action": "snapshot", "addr": 0, "size": 0, "stream": 0},
      {"action": "something_new", "addr": 0, "size": 0}]],
    "segments": [{"address": 0, "total_size": 20971520, "stream": 0, "blocks": []},
                 {"address": 67108864, "total_size": 2097152, "stream": 0, "blocks": []}]})");
  EXPECT_EQ(t.reserved_at_start, 2097152u);  // 22 MiB at the end, less 20 + 2 - 2 the trace added
  ASSERT_EQ(t.reserved.size(), 3u);
  EXPECT_EQ(t.reserved[0].reserved_bytes, 23068672u);
  EXPECT_EQ(t.reserved[1].reserved_bytes, 20971520u);
  EXPECT_EQ(t.reserved[1].trace_events, 1u);
  EXPECT_EQ(t.reserved[2].reserved_bytes, 23068672u);
  EXPECT_EQ(t.peak_reserved, 23068672u);
  ASSERT_EQ(t.ooms.size(), 1u);
  EXPECT_EQ(t.ooms[0].entry, 3u);
  EXPECT_EQ(t.ooms[0].bytes, 104857600u);
  EXPECT_EQ(t.ooms[0].device_free, 1048576u);
  EXPECT_EQ(t.ooms[0].trace_events, 1u);
  EXPECT_EQ(t.ooms[0].stream, 0);
}

TEST(SnapshotTrace, OlderSnapshotsFreeAndPendingFreeBlocksAtTheEnd) {
  // PyTorch's older snapshots write `free` for a completed free.
  const SnapshotTrace t = of_json(R"({"device_traces": [[
      {"action": "alloc", "addr": 100, "size": 512, "stream": 0},
      {"action": "free", "addr": 100, "size": 512, "stream": 0}]],
    "segments": [{"address": 0, "total_size": 2097152, "stream": 5,
                  "blocks": [{"address": 100, "size": 512, "requested_size": 0, "state": "inactive"},
                             {"address": 612, "size": 1024, "requested_size": 1000, "state": "active_pending_free"}]}]})");
  // The pending-free block holds its memory at the end and the trace never mentions it: live all along.
  ASSERT_EQ(t.trace.size(), 3u);
  EXPECT_EQ(t.live_at_start, 1u);
  EXPECT_EQ(t.trace[0].bytes, 1000u);
  EXPECT_EQ(t.streams, (std::vector<std::int64_t>{0, 5}));
  EXPECT_EQ(t.stream[0], 1);
  EXPECT_EQ(t.trace[2].kind, TraceEvent::Kind::free);
  EXPECT_EQ(t.trace[2].id, t.trace[1].id);
}

TEST(SnapshotTrace, MemoSharedFramesAreOneStack) {
  // pickle.dumps(snap, 4) of
  //   frames = [{'filename': '/home/u/a.py', 'line': 1, 'name': 'f'}]
  //   snap = {'device_traces': [[{'action': 'alloc', 'addr': 1024, 'size': 512, 'frames': frames},
  //                              {'action': 'free_completed', 'addr': 1024, 'size': 512, 'frames': frames}]]}
  // The second entry's frames are BINGET of the first's list.
  const std::string bytes =
      "\x80\x04\x95\xa7\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x0d" "device_traces\x94]\x94]\x94(}\x94(\x8c\x06"
      "action\x94\x8c\x05" "alloc\x94\x8c\x04" "addr\x94M\x00\x04\x8c\x04" "size\x94M\x00\x02\x8c\x06"
      "frames\x94]\x94}\x94(\x8c\x08" "filename\x94\x8c\x0c/home/u/a.py\x94\x8c\x04" "line\x94K\x01\x8c\x04"
      "name\x94\x8c\x01" "f\x94uau}\x94(h\x05\x8c\x0e" "free_completed\x94h\x07M\x00\x04h\x08M\x00\x02h\x09h\x0a"
      "ueas."s;
  ASSERT_EQ(bytes.size(), 178u);
  const SnapshotTrace t = read_snapshot_trace(bytes, "shared.pickle");
  ASSERT_EQ(t.trace.size(), 2u);
  ASSERT_EQ(t.stacks.size(), 1u);
  EXPECT_EQ(t.stack, (std::vector<int>{0, 0}));
  EXPECT_EQ(t.label(0), "a.py:1:f");
}

TEST(SnapshotTrace, TheBusiestDeviceUnlessOneIsAsked) {
  const std::string two = R"({"device_traces": [
      [{"action": "alloc", "addr": 1, "size": 10, "stream": 0}],
      [{"action": "alloc", "addr": 1, "size": 20, "stream": 0}, {"action": "alloc", "addr": 2, "size": 30, "stream": 0}]]})";
  EXPECT_EQ(of_json(two).device, 1);
  EXPECT_EQ(of_json(two).trace.size(), 2u);
  EXPECT_EQ(of_json(two, 0).trace.size(), 1u);
  EXPECT_EQ(refusal(two, 2), "s.json: the snapshot has 2 device(s) (indices 0 to 1); there is no device 2");
}

TEST(SnapshotTrace, RefusesInconsistentTracesAndBadFieldsNamingThem) {
  EXPECT_EQ(refusal(R"({"device_traces": [[{"action": "alloc", "addr": 16, "size": 10, "stream": 0},
                                           {"action": "alloc", "addr": 16, "size": 10, "stream": 0}]]})"),
            "s.json: device_traces[0][1]: alloc at 0x10, which is still allocated (since entry 0)");
  EXPECT_EQ(refusal(R"({"device_traces": [[{"action": "free_completed", "addr": 16, "size": 10, "stream": 0},
                                           {"action": "free_completed", "addr": 16, "size": 10, "stream": 0}]]})"),
            "s.json: device_traces[0][1]: free_completed of 0x10, which is not allocated (freed at entry 0)");
  EXPECT_EQ(refusal(R"({"device_traces": [[{"action": "alloc", "addr": 16, "size": "10"}]]})"),
            "s.json: device_traces[0][0].size: expected a non-negative integer, got string");
  EXPECT_EQ(refusal(R"({"device_traces": [[{"action": "alloc", "size": 10}]]})"),
            "s.json: device_traces[0][0]: has no 'addr'");
  EXPECT_EQ(refusal(R"({"device_traces": [[{"action": "alloc", "addr": 16, "size": 10, "stream": 0,
                                            "frames": [{"filename": 3}]}]]})"),
            "s.json: device_traces[0][0].frames[0].filename: expected a string, got integer");
  EXPECT_EQ(refusal(R"({"segments": [{"address": 0, "total_size": -5}]})"),
            "s.json: segments[0].total_size: expected a non-negative integer, got a negative one");
  EXPECT_EQ(refusal(R"([1, 2])"), "s.json: the snapshot: expected a dict, got list");
  EXPECT_NE(refusal(R"({"something": 1})").find("neither 'device_traces' nor 'segments'"), std::string::npos);
  EXPECT_NE(refusal(R"({"device_traces": [[{"action": "alloc", "addr": 16, "size": 281474976710657}]]})")
                .find("alloc of 281474976710657 bytes (at most 2^48)"),
            std::string::npos);
}

TEST(SnapshotTrace, UserFramesAreOutsideTorchAndPythonsLibrary) {
  EXPECT_TRUE(is_user_frame({"/home/me/train.py", 1, "main"}));
  EXPECT_TRUE(is_user_frame({"/venv/lib/python3.11/site-packages/torchvision/models/resnet.py", 1, "forward"}));
  EXPECT_TRUE(is_user_frame({"train.py", 1, "main"}));
  EXPECT_FALSE(is_user_frame({"/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1, "_call_impl"}));
  EXPECT_FALSE(is_user_frame({"/usr/lib/python3.11/contextlib.py", 1, "inner"}));
  EXPECT_FALSE(is_user_frame({"??", 0, "c10::cuda::CUDACachingAllocator::malloc"}));
  EXPECT_FALSE(is_user_frame({"/pytorch/c10/cuda/CUDACachingAllocator.cpp", 1, "malloc"}));
  EXPECT_EQ(frame_label({{"??", 0, "malloc"}, {"/a/torch/x.py", 3, "f"}}), "??:0:malloc");  // no user frame: the innermost
  EXPECT_EQ(frame_label({}), "");
}

TEST(SnapshotFile, TheFormatIsToldByContent) {
  EXPECT_EQ(trace_file_format("\x80\x04..."), TraceFileFormat::pickle);
  EXPECT_EQ(trace_file_format("  \n{\"segments\": []}"), TraceFileFormat::json);
  EXPECT_EQ(trace_file_format("event,id,bytes\n"), TraceFileFormat::csv);
  EXPECT_EQ(trace_file_format(""), TraceFileFormat::csv);
  // Protocols 0 and 1 have no PROTO byte: told by their first opcode and the STOP at the end.
  EXPECT_EQ(trace_file_format("(dp0\nS'a'\np1\nI1\ns."), TraceFileFormat::pickle);
  EXPECT_EQ(trace_file_format("}q\x00X\x01\x00\x00\x00aq\x01K\x01s."s), TraceFileFormat::pickle);
  EXPECT_EQ(trace_file_format("cos\nsystem\n(S'echo hi'\ntR."), TraceFileFormat::pickle);
  const auto refused = [](const std::string& bytes, const std::string& source) {
    try {
      read_snapshot_trace(bytes, source);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(read without an error)");
  };
  EXPECT_EQ(refused("(dp0\nS'a'\np1\nI1\ns.", "old.pickle")
                .rfind("old.pickle: byte 0: no PROTO opcode (0x80) first: a pickle of protocol 0 or 1", 0),
            0u);
  EXPECT_EQ(refused("{not json", "bad.json").rfind("bad.json: not valid JSON", 0), 0u);
}

}  // namespace
}  // namespace tidepool
