#include "engine/memory/alloc_trace.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "engine/memory/parking.h"
#include "engine/plan/schedule.h"

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

// Live blocks by offset, checked as they come: the overlap check of
// replay(), and the holes between them for the largest free range below the
// footprint.
class Occupancy {
 public:
  explicit Occupancy(std::size_t pool_bytes) : pool_(pool_bytes) {}

  void add(std::size_t offset, std::size_t bytes, const std::string& who) {
    if (offset % kAllocGranularity != 0)
      throw std::logic_error(who + " placed a block at offset " + std::to_string(offset) +
                             ", not a multiple of " + std::to_string(kAllocGranularity));
    if (offset > pool_ || bytes > pool_ - offset)
      throw std::logic_error(who + " placed [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                             ") past the end of its " + std::to_string(pool_) + "-byte pool");
    auto next = blocks_.lower_bound(offset);
    if (next != blocks_.end() && next->first < offset + bytes)
      throw std::logic_error(who + " placed [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                             ") over the live block at " + std::to_string(next->first));
    std::size_t prev_end = 0;
    if (next != blocks_.begin()) {
      auto prev = std::prev(next);
      if (prev->second > offset)
        throw std::logic_error(who + " placed [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                               ") over the live block at " + std::to_string(prev->first));
      prev_end = prev->second;
    }
    if (next != blocks_.end()) remove_gap(next->first - prev_end);
    add_gap(offset - prev_end);
    if (next != blocks_.end()) add_gap(next->first - (offset + bytes));
    blocks_.emplace_hint(next, offset, offset + bytes);
  }

  void remove(std::size_t offset) {
    auto it = blocks_.find(offset);
    const std::size_t end = it->second;
    auto next = std::next(it);
    const std::size_t prev_end = it == blocks_.begin() ? 0 : std::prev(it)->second;
    remove_gap(offset - prev_end);
    if (next != blocks_.end()) {
      remove_gap(next->first - end);
      add_gap(next->first - prev_end);
    }
    blocks_.erase(it);
  }

  std::size_t extent() const { return blocks_.empty() ? 0 : blocks_.rbegin()->second; }
  // The largest free range between offset 0 and `footprint`.
  std::size_t largest_free_below(std::size_t footprint) const {
    const std::size_t top = footprint > extent() ? footprint - extent() : 0;
    return std::max(top, gaps_.empty() ? 0 : *gaps_.rbegin());
  }

 private:
  void add_gap(std::size_t g) {
    if (g) gaps_.insert(g);
  }
  void remove_gap(std::size_t g) {
    if (g) gaps_.erase(gaps_.find(g));
  }

  std::size_t pool_;
  std::map<std::size_t, std::size_t> blocks_;  // offset -> end
  std::multiset<std::size_t> gaps_;            // free ranges between live blocks (not above the last)
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
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot open trace file '" + path + "'");
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
      const std::size_t b = round_up(e.bytes);
      total = b > std::numeric_limits<std::size_t>::max() - total ? std::numeric_limits<std::size_t>::max()
                                                                   : total + b;
    }
  return total;
}

AllocTrace trace_of(const Schedule& s, int iterations) {
  AllocTrace trace;
  for (int t : s.persistent) trace.push_back({TraceEvent::Kind::alloc, t, s.tensors[t].info.bytes(), false});
  for (int i = 0; i < iterations; ++i)
    for (const Step& st : s.steps) {
      if (st.kind == StepKind::alloc)
        trace.push_back({TraceEvent::Kind::alloc, st.tensor, s.tensors[st.tensor].info.bytes(), st.will_offload});
      else if (st.kind == StepKind::free)
        trace.push_back({TraceEvent::Kind::free, st.tensor, 0, false, s.parks(st)});  // replay with s.park_horizon
    }
  return trace;
}

TraceReplay replay(const AllocTrace& trace, Allocator& allocator, int park_horizon) {
  validate(trace);
  TraceReplay r;
  const std::string who = "allocator '" + std::string(allocator.name()) + "'";
  Occupancy occupied(allocator.stats().pool_bytes);
  AsyncRelease pool(allocator, park_horizon);
  std::unordered_map<std::int64_t, std::pair<std::size_t, std::size_t>> block;  // id -> offset, bytes
  std::size_t load = 0;  // the live blocks' (parked ones are dead, though still taken)
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceEvent& e = trace[i];
    if (e.kind == TraceEvent::Kind::free) {
      auto it = block.find(e.id);
      if (e.after_copy) {
        pool.free_after_copy(e.id, it->second.first, it->second.second);
        for (const AsyncRelease::Parked& given_back : pool.released()) occupied.remove(given_back.offset);
      } else {
        pool.free(it->second.first);
        occupied.remove(it->second.first);
      }
      load -= it->second.second;
      block.erase(it);
      continue;
    }
    const int tensor = e.id >= 0 && e.id <= INT_MAX ? static_cast<int>(e.id) : -1;
    const std::size_t bytes = round_up(e.bytes);
    const auto offset = pool.allocate(e.id, {e.bytes, tensor, Role::activation, e.will_offload});
    for (const AsyncRelease::Parked& given_back : pool.released()) occupied.remove(given_back.offset);
    if (!offset) {
      r.fits = false;
      r.failed_event = static_cast<int>(i);
      r.failed_request_bytes = bytes;
      r.stats = pool.stats();
      r.largest_free_at_failure_bytes = r.stats.largest_free_block_bytes;
      return r;
    }
    if (!pool.reclaimed()) occupied.add(*offset, bytes, who);  // a reclaimed block never left
    block.emplace(e.id, std::make_pair(*offset, bytes));
    load += bytes;
    if (load >= r.peak_load_bytes) {
      r.peak_load_bytes = load;
      // Below the policy's own footprint (exact reports the ideal one, cnmem
      // the pools it claimed) and no larger than what it says it could serve.
      const PoolStats st = pool.stats();
      const std::size_t footprint = std::max(st.peak_extent_bytes, load);
      r.largest_free_at_peak_bytes = std::min(
          {occupied.largest_free_below(footprint), st.largest_free_block_bytes, footprint - load});
    }
  }
  r.stats = pool.stats();
  return r;
}

}  // namespace tidepool
