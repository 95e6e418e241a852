#include "engine/observe/sinks/chrome_trace_writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace tidepool {

namespace {

using nlohmann::json;

// Serialises one event. Names come from model files and tensor tables, so
// invalid UTF-8 is replaced rather than allowed to throw mid-run.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

const char* track_name(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::offload: return "offload (D2H)";
    case Stream::prefetch: return "prefetch (H2D)";
    case Stream::comm: return "comm (all-reduce)";
  }
  return "?";
}

// "conv1 fwd" for compute; the tensor for transfers, since the track
// already says which way it moved; "compress <tensor>" for the host work
// beside them; "wait <tensor>" for stalls.
std::string span_name(const SpanEvent& e) {
  auto with_layer = [&](const char* suffix) {
    return e.layer.empty() ? std::string(suffix) : e.layer + " " + suffix;
  };
  switch (e.kind) {
    case SpanKind::forward: return with_layer("fwd");
    case SpanKind::backward: return with_layer("bwd");
    case SpanKind::accumulate: return with_layer("acc");
    case SpanKind::recompute: return with_layer("recompute");
    case SpanKind::update: return with_layer("update");
    case SpanKind::offload:
    case SpanKind::prefetch:
      if (!e.tensor.empty()) return e.tensor;
      return with_layer(to_string(e.kind));
    case SpanKind::compress:
    case SpanKind::decompress: return std::string(to_string(e.kind)) + " " + e.tensor;
    case SpanKind::wait:
      if (!e.tensor.empty()) return "wait " + e.tensor;
      return with_layer("wait");
    case SpanKind::pack:
    case SpanKind::all_reduce:
    case SpanKind::unpack: return std::string(to_string(e.kind)) + " " + e.tensor;
  }
  return "?";
}

json metadata(const char* what, int tid, json args) {
  json j = {{"ph", "M"},
            {"name", what},
            {"pid", ChromeTraceWriter::kProcessId},
            {"args", std::move(args)}};
  if (tid >= 0) j["tid"] = tid;
  return j;
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::string path, ChromeTraceOptions options)
    : path_(std::move(path)), options_(options) {
  out_.open(path_, std::ios::out | std::ios::trunc);
  if (!out_) {
    throw std::runtime_error("cannot open trace file '" + path_ + "' for writing: " +
                             std::strerror(errno));
  }
  // The opening and the track names go first, so that every later event is
  // written with a leading separator and the array is valid at any flush.
  out_ << "{\"traceEvents\":[\n";
  out_ << dump(metadata("process_name", -1, {{"name", "tidepool"}}));
  auto track = [&](int tid, const char* name) {
    write_event(dump(metadata("thread_name", tid, {{"name", name}})));
    // Keep the tracks in stream order rather than the viewer's default.
    write_event(dump(metadata("thread_sort_index", tid, {{"sort_index", tid}})));
  };
  for (int i = 0; i < kStreamCount; ++i) {
    const auto s = static_cast<Stream>(i);
    track(track_id(s), track_name(s));
  }
  track(kIterationTrackId, "iterations");
}

ChromeTraceWriter::~ChromeTraceWriter() {
  try {
    std::lock_guard lock(mutex_);
    close();
  } catch (...) {
    // A destructor must not throw; whoever cares about write errors calls
    // flush() and gets them there.
  }
}

void ChromeTraceWriter::write_event(const std::string& event) { out_ << ",\n" << event; }

void ChromeTraceWriter::on_span(const SpanEvent& e) {
  json args = {{"step", e.step}, {"iteration", e.iteration}, {"bytes", e.bytes}};
  if (!e.layer.empty()) args["layer"] = e.layer;
  if (!e.tensor.empty()) args["tensor"] = e.tensor;
  const json j = {{"ph", "X"},
                  {"name", span_name(e)},
                  {"cat", to_string(e.kind)},
                  {"pid", kProcessId},
                  {"tid", track_id(e.stream)},
                  {"ts", e.start_us},
                  {"dur", e.end_us > e.start_us ? e.end_us - e.start_us : 0.0},
                  {"args", std::move(args)}};
  const std::string s = dump(j);
  std::lock_guard lock(mutex_);
  if (!closed_) write_event(s);
}

void ChromeTraceWriter::on_alloc(const AllocEvent& e) {
  if (!options_.allocations) return;
  const json j = {{"ph", "i"},
                  {"s", "t"},
                  {"name", std::string(to_string(e.action)) + " " + e.name},
                  {"cat", to_string(e.action)},
                  {"pid", kProcessId},
                  {"tid", track_id(Stream::compute)},
                  {"ts", e.time_us},
                  {"args",
                   {{"tensor", e.tensor},
                    {"role", std::string(to_string(e.role))},
                    {"offset", e.offset},
                    {"bytes", e.bytes},
                    {"step", e.step},
                    {"iteration", e.iteration}}}};
  const std::string s = dump(j);
  std::lock_guard lock(mutex_);
  if (!closed_) write_event(s);
}

void ChromeTraceWriter::on_load(const LoadSample& e) {
  // Counter args become the series of the counter track, so only the two
  // byte counts go there (step and iteration would be plotted too).
  const json j = {{"ph", "C"},
                  {"name", "memory"},
                  {"pid", kProcessId},
                  {"ts", e.time_us},
                  {"args", {{"load", e.load_bytes}, {"extent", e.extent_bytes}}}};
  const std::string s = dump(j);
  std::lock_guard lock(mutex_);
  if (!closed_) write_event(s);
}

void ChromeTraceWriter::on_iteration(const IterationSummary& e) {
  const json j = {{"ph", "X"},
                  {"name", "iteration " + std::to_string(e.iteration)},
                  {"cat", "iteration"},
                  {"pid", kProcessId},
                  {"tid", kIterationTrackId},
                  {"ts", e.start_us},
                  {"dur", e.end_us > e.start_us ? e.end_us - e.start_us : 0.0},
                  {"args",
                   {{"iteration", e.iteration},
                    {"loss", e.loss},
                    {"accuracy", e.accuracy},
                    {"peak_load_bytes", e.peak_load_bytes},
                    {"footprint_bytes", e.footprint_bytes}}}};
  const std::string s = dump(j);
  std::lock_guard lock(mutex_);
  if (!closed_) write_event(s);
}

void ChromeTraceWriter::flush() {
  std::lock_guard lock(mutex_);
  close();
}

void ChromeTraceWriter::close() {
  if (closed_) return;
  closed_ = true;
  out_ << "\n],\"displayTimeUnit\":\"ms\"}\n";
  out_.close();
  if (out_.fail()) {
    throw std::runtime_error("could not write trace file '" + path_ +
                             "' (disk full or file removed?)");
  }
}

}  // namespace tidepool
