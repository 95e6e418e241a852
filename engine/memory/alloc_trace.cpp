#include "engine/memory/alloc_trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "engine/core/file_bytes.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> fields;
  for (;;) {
    const auto comma = line.find(',');
    fields.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

template <class Int>
bool parse_int(std::string_view s, Int& value) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

// The semantic checks shared by the reader and validate(): ids live at most
// once, frees name a live id, sizes in range.
class LiveIds {
 public:
  // Returns an error message, or nothing.
  std::string apply(const TraceEvent& e) {
    if (e.kind == TraceEvent::Kind::alloc) {
      if (e.bytes == 0) return "alloc of id " + std::to_string(e.id) + " has no size (bytes must be positive)";
      if (e.bytes > kMaxTraceBlockBytes)
        return "alloc of id " + std::to_string(e.id) + " is too large (" + std::to_string(e.bytes) +
               " bytes; at most 2^48)";
      if (!live_.insert(e.id).second)
        return "alloc of id " + std::to_string(e.id) + ", which is still live (free it first)";
    } else if (live_.erase(e.id) == 0) {
      return "free of id " + std::to_string(e.id) + ", which is not live";
    }
    return {};
  }

 private:
  std::unordered_set<std::int64_t> live_;
};

}  // namespace

AllocTrace read_trace(std::istream& in, const std::string& source) {
  AllocTrace trace;
  LiveIds live;
  std::string line;
  int line_no = 0;
  std::size_t columns = 0;  // 0 until the header is read
  auto fail = [&](const std::string& what) -> void {
    throw std::invalid_argument(source + ":" + std::to_string(line_no) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++line_no;
    const std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<std::string_view> f = split(text);
    if (columns == 0) {
      const bool three = f.size() == 3, four = f.size() == 4 && f[3] == "offload";
      if (!(three || four) || f[0] != "event" || f[1] != "id" || f[2] != "bytes")
        fail("expected the header 'event,id,bytes,offload' (or 'event,id,bytes'), got '" + std::string(text) + "'");
      columns = f.size();
      continue;
    }
    // A row may leave out a trailing empty offload field.
    if (f.size() != columns && !(columns == 4 && f.size() == 3))
      fail("expected " + std::to_string(columns) + " comma-separated fields, got " + std::to_string(f.size()));
    TraceEvent e;
    if (f[0] == "alloc")
      e.kind = TraceEvent::Kind::alloc;
    else if (f[0] == "free")
      e.kind = TraceEvent::Kind::free;
    else
      fail("unknown event '" + std::string(f[0]) + "' (expected alloc or free)");
    if (!parse_int(f[1], e.id)) fail("id '" + std::string(f[1]) + "' is not an integer");
    if (e.kind == TraceEvent::Kind::alloc) {
      if (f[2].empty()) fail("alloc of id " + std::to_string(e.id) + " has no bytes");
      std::uint64_t bytes = 0;
      if (!parse_int(f[2], bytes)) fail("bytes '" + std::string(f[2]) + "' is not a non-negative integer");
      e.bytes = bytes > kMaxTraceBlockBytes ? kMaxTraceBlockBytes + 1 : static_cast<std::size_t>(bytes);
    } else if (std::uint64_t ignored = 0; !f[2].empty() && !parse_int(f[2], ignored)) {
      fail("bytes '" + std::string(f[2]) + "' is not a non-negative integer (leave it empty for a free)");
    }
    if (f.size() == 4 && !f[3].empty()) {
      if (f[3] == "1")
        (e.kind == TraceEvent::Kind::alloc ? e.will_offload : e.after_copy) = true;
      else if (f[3] != "0")
        fail("offload '" + std::string(f[3]) + "' must be 0 or 1");
    }
    if (std::string err = live.apply(e); !err.empty()) fail(err);
    trace.push_back(e);
  }
  if (columns == 0)
    throw std::invalid_argument(source + ": empty trace (expected the header 'event,id,bytes,offload')");
  return trace;
}

AllocTrace read_trace_file(const std::string& path) {
  std::istringstream in(read_file_bytes(path, "trace file"));
  return read_trace(in, path);
}

void write_trace(std::ostream& out, const AllocTrace& trace) {
  out << "event,id,bytes,offload\n";
  for (const TraceEvent& e : trace) {
    if (e.kind == TraceEvent::Kind::alloc)
      out << "alloc," << e.id << ',' << e.bytes << ',' << (e.will_offload ? 1 : 0) << '\n';
    else
      out << "free," << e.id << ",," << (e.after_copy ? "1" : "") << '\n';
  }
}

void write_trace_file(const std::string& path, const AllocTrace& trace) {
  std::ofstream out(path);
  if (!out) throw std::invalid_argument("cannot write trace file '" + path + "'");
  write_trace(out, trace);
  if (!out.flush()) throw std::invalid_argument("error writing trace file '" + path + "'");
}

void validate(const AllocTrace& trace) {
  LiveIds live;
  for (std::size_t i = 0; i < trace.size(); ++i)
    if (std::string err = live.apply(trace[i]); !err.empty())
      throw std::invalid_argument("trace event " + std::to_string(i) + ": " + err);
}

std::size_t peak_load_bytes(const AllocTrace& trace) {
  std::unordered_map<std::int64_t, std::size_t> size;
  std::size_t load = 0, peak = 0;
  for (const TraceEvent& e : trace) {
    if (e.kind == TraceEvent::Kind::alloc) {
      const std::size_t b = round_up(e.bytes);
      size[e.id] = b;
      load += b;
      peak = std::max(peak, load);
    } else if (auto it = size.find(e.id); it != size.end()) {
      load -= it->second;
      size.erase(it);
    }
  }
  return peak;
}

std::size_t total_alloc_bytes(const AllocTrace& trace) {
  std::size_t total = 0;
  for (const TraceEvent& e : trace)
    if (e.kind == TraceEvent::Kind::alloc) {
      const std::size_t b = most_claimed_bytes(e.bytes);
      total = b > std::numeric_limits<std::size_t>::max() - total ? std::numeric_limits<std::size_t>::max()
                                                                   : total + b;
    }
  return total;
}

AllocTrace trace_of(const Schedule& s, int iterations, bool with_persistent) {
  AllocTrace trace;
  auto alloc = [&](int t, bool will_offload, int step) {
    const TensorInfo& info = s.tensors[t].info;
    trace.push_back({TraceEvent::Kind::alloc, t, info.bytes(), will_offload, false, step, 0, info.role});
  };
  if (with_persistent)
    for (int t : s.persistent) alloc(t, false, -1);
  for (int i = 0; i < iterations; ++i)
    for (int step = 0; step < static_cast<int>(s.steps.size()); ++step) {
      const Step& st = s.steps[step];
      if (st.kind == StepKind::alloc)
        alloc(st.tensor, st.will_offload, step);
      else if (st.kind == StepKind::free)  // parked where the replay's horizon allows
        trace.push_back({TraceEvent::Kind::free, st.tensor, 0, false, st.after_copy, step});
    }
  return trace;
}

}  // namespace tidepool
