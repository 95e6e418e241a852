#include "engine/observe/sinks/chrome_trace_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/temp_dir.h"

namespace tidepool {
namespace {

using nlohmann::json;
using testing::TempDir;

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);  // throws (fails the test) on invalid JSON
}

std::vector<json> events_with(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

SpanEvent span(Stream stream, SpanKind kind, std::string layer, std::string tensor, double start,
               double end) {
  SpanEvent e;
  e.iteration = 3;
  e.step = 11;
  e.stream = stream;
  e.kind = kind;
  e.layer = std::move(layer);
  e.tensor = std::move(tensor);
  e.bytes = 4096;
  e.start_us = start;
  e.end_us = end;
  return e;
}

TEST(ChromeTraceWriter, EmptyTraceIsValidJson) {
  const TempDir dir("chrome_trace");
  const std::string file = (dir / "trace.json").string();
  { ChromeTraceWriter writer(file); }  // destructor closes the trace
  const json trace = read_json(file);
  ASSERT_TRUE(trace.at("traceEvents").is_array());
  EXPECT_TRUE(events_with(trace, "X").empty());
  EXPECT_TRUE(events_with(trace, "C").empty());
}

TEST(ChromeTraceWriter, NamesOneTrackPerStream) {
  const TempDir dir("chrome_trace");
  const std::string file = (dir / "trace.json").string();
  ChromeTraceWriter writer(file);
  writer.flush();
  const json trace = read_json(file);

  std::map<int, std::string> threads;
  for (const auto& e : events_with(trace, "M")) {
    if (e.at("name") == "thread_name") {
      const int tid = e.at("tid");
      EXPECT_EQ(threads.count(tid), 0u) << "track " << tid << " named twice";
      threads[tid] = e.at("args").at("name");
    }
  }
  EXPECT_EQ(threads[ChromeTraceWriter::track_id(Stream::compute)], "compute");
  EXPECT_EQ(threads[ChromeTraceWriter::track_id(Stream::offload)], "offload (D2H)");
  EXPECT_EQ(threads[ChromeTraceWriter::track_id(Stream::prefetch)], "prefetch (H2D)");
  EXPECT_EQ(threads[ChromeTraceWriter::track_id(Stream::comm)], "comm (all-reduce)");
  EXPECT_EQ(threads[ChromeTraceWriter::kIterationTrackId], "iterations");
  EXPECT_EQ(threads.size(), 5u);
}

TEST(ChromeTraceWriter, WritesSpansAsCompleteEventsOnTheirStreams) {
  const TempDir dir("chrome_trace");
  const std::string file = (dir / "trace.json").string();
  {
    ChromeTraceWriter writer(file);
    writer.on_span(span(Stream::compute, SpanKind::forward, "conv1", "", 100.0, 250.5));
    writer.on_span(span(Stream::offload, SpanKind::offload, "conv1", "conv1.y", 120.0, 180.0));
    writer.on_span(span(Stream::prefetch, SpanKind::prefetch, "conv1", "conv1.y", 300.0, 360.0));
    writer.on_span(span(Stream::compute, SpanKind::backward, "conv1", "", 400.0, 500.0));
    writer.on_span(span(Stream::compute, SpanKind::wait, "conv1", "conv1.y", 390.0, 400.0));
    writer.on_span(span(Stream::offload, SpanKind::compress, "", "conv1.y", 180.0, 190.0));
    writer.flush();
  }
  const json trace = read_json(file);
  const auto spans = events_with(trace, "X");
  ASSERT_EQ(spans.size(), 6u);

  const json& fwd = spans[0];
  EXPECT_EQ(fwd.at("name"), "conv1 fwd");
  EXPECT_EQ(fwd.at("cat"), "forward");
  EXPECT_EQ(fwd.at("pid"), ChromeTraceWriter::kProcessId);
  EXPECT_EQ(fwd.at("tid"), ChromeTraceWriter::track_id(Stream::compute));
  EXPECT_DOUBLE_EQ(fwd.at("ts").get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(fwd.at("dur").get<double>(), 150.5);
  EXPECT_EQ(fwd.at("args").at("step"), 11);
  EXPECT_EQ(fwd.at("args").at("iteration"), 3);
  EXPECT_EQ(fwd.at("args").at("bytes"), 4096);

  const json& off = spans[1];
  EXPECT_EQ(off.at("name"), "conv1.y");
  EXPECT_EQ(off.at("tid"), ChromeTraceWriter::track_id(Stream::offload));
  EXPECT_DOUBLE_EQ(off.at("dur").get<double>(), 60.0);

  EXPECT_EQ(spans[2].at("tid"), ChromeTraceWriter::track_id(Stream::prefetch));
  EXPECT_EQ(spans[3].at("name"), "conv1 bwd");
  EXPECT_EQ(spans[4].at("name"), "wait conv1.y");
  EXPECT_EQ(spans[4].at("cat"), "wait");
  EXPECT_EQ(spans[5].at("name"), "compress conv1.y");
  EXPECT_EQ(spans[5].at("cat"), "compress");
  EXPECT_EQ(spans[5].at("tid"), ChromeTraceWriter::track_id(Stream::offload));
}

TEST(ChromeTraceWriter, WritesMemoryLoadAsACounter) {
  const TempDir dir("chrome_trace");
  const std::string file = (dir / "trace.json").string();
  ChromeTraceWriter writer(file);
  LoadSample s;
  s.time_us = 42.5;
  s.load_bytes = 1 << 20;
  s.extent_bytes = 3 << 20;
  writer.on_load(s);
  writer.flush();

  const json trace = read_json(file);
  const auto counters = events_with(trace, "C");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].at("name"), "memory");
  EXPECT_DOUBLE_EQ(counters[0].at("ts").get<double>(), 42.5);
  EXPECT_EQ(counters[0].at("args").at("load"), 1 << 20);
  EXPECT_EQ(counters[0].at("args").at("extent"), 3 << 20);
}

TEST(ChromeTraceWriter, WritesIterationsOnTheirOwnTrack) {
  const TempDir dir("chrome_trace");
  const std::string file = (dir / "trace.json").string();
  ChromeTraceWriter writer(file);
  IterationSummary it;
  it.iteration = 7;
  it.start_us = 1000;
  it.end_us = 5000;
  it.loss = 2.25f;
  it.accuracy = 0.5f;
  writer.on_iteration(it);
  writer.flush();

  const auto spans = events_with(read_json(file), "X");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].at("name"), "iteration 7");
  EXPECT_EQ(spans[0].at("tid"), ChromeTraceWriter::kIterationTrackId);
  EXPECT_DOUBLE_EQ(spans[0].at("dur").get<double>(), 4000.0);
  EXPECT_DOUBLE_EQ(spans[0].at("args").at("loss").get<double>(), 2.25);
}

TEST(ChromeTraceWriter, AllocationsOnlyWhenAskedFor) {
  AllocEvent a;
  a.name = "conv1.y";
  a.role = Role::activation;
  a.offset = 512;
  a.bytes = 1024;
  a.time_us = 10;

  const TempDir dir("chrome_trace");
  const std::string quiet = (dir / "quiet.json").string();
  {
    ChromeTraceWriter writer(quiet);
    writer.on_alloc(a);
  }
  EXPECT_TRUE(events_with(read_json(quiet), "i").empty());

  const std::string verbose = (dir / "verbose.json").string();
  {
    ChromeTraceWriter writer(verbose, ChromeTraceOptions{.allocations = true});
    writer.on_alloc(a);
    a.action = PoolAction::free;
    writer.on_alloc(a);
    a.action = PoolAction::park;
    writer.on_alloc(a);
  }
  const auto instants = events_with(read_json(verbose), "i");
  ASSERT_EQ(instants.size(), 3u);
  EXPECT_EQ(instants[0].at("name"), "alloc conv1.y");
  EXPECT_EQ(instants[0].at("args").at("offset"), 512);
  EXPECT_EQ(instants[0].at("args").at("role"), "activation");
  EXPECT_EQ(instants[1].at("name"), "free conv1.y");
  EXPECT_EQ(instants[2].at("name"), "park conv1.y");
  EXPECT_EQ(instants[2].at("cat"), "park");
}

TEST(ChromeTraceWriter, EscapesNames) {
  const TempDir dir("chrome_trace");
  const std::string file = (dir / "trace.json").string();
  {
    ChromeTraceWriter writer(file);
    writer.on_span(span(Stream::compute, SpanKind::forward, "block \"a\"\\b\n", "", 0, 1));
  }
  const auto spans = events_with(read_json(file), "X");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].at("name"), "block \"a\"\\b\n fwd");
}

TEST(ChromeTraceWriter, IgnoresEventsAfterFlush) {
  const TempDir dir("chrome_trace");
  const std::string file = (dir / "trace.json").string();
  ChromeTraceWriter writer(file);
  writer.flush();
  writer.on_span(span(Stream::compute, SpanKind::forward, "late", "", 0, 1));
  writer.flush();
  EXPECT_TRUE(events_with(read_json(file), "X").empty());
}

TEST(ChromeTraceWriter, UnwritablePathThrowsNamingIt) {
  const std::string path = "/nonexistent-tidepool-dir/trace.json";
  try {
    ChromeTraceWriter writer(path);
    FAIL() << "opening " << path << " did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tidepool
