#include "engine/memory/snapshot/snapshot_trace.h"

#include "engine/core/bytes_text.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace tidepool {

namespace {

std::string hex(std::uint64_t v) { return "0x" + hex_text(v); }

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return b > std::numeric_limits<std::uint64_t>::max() - a ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

// Trace events in the making, with their side data; the live-at-start
// blocks and the trace's own events are built apart and joined at the end.
struct Events {
  AllocTrace trace;
  std::vector<std::int64_t> stream_handle, entry;
  std::vector<int> stack;
  void add(const TraceEvent& e, std::int64_t stream, int frames, std::int64_t from) {
    trace.push_back(e);
    stream_handle.push_back(stream);
    stack.push_back(frames);
    entry.push_back(from);
  }
};

// Ids by call site: an alloc takes the lowest id a block with the same
// frames and size has freed, else a new one.
class Ids {
 public:
  std::int64_t take(int stack, std::size_t bytes) {
    auto& spare = freed_[{stack, bytes}];
    if (spare.empty()) return next_++;
    const std::int64_t id = *spare.begin();
    spare.erase(spare.begin());
    return id;
  }
  // An id no block has had.
  std::int64_t fresh() { return next_++; }
  void give_back(int stack, std::size_t bytes, std::int64_t id) { freed_[{stack, bytes}].insert(id); }

 private:
  std::map<std::pair<int, std::size_t>, std::set<std::int64_t>> freed_;
  std::int64_t next_ = 0;
};

struct LiveBlock {
  std::int64_t id = -1;  // -1: a 0-byte block, which is left out of the trace
  std::size_t bytes = 0;
  int stack = -1;  // the alloc's frames: the id's key
  std::size_t since = 0;  // its alloc's entry
};

bool is_python_library_folder(const std::string& folder) {
  // python3, python3.11, python2.7 ...
  if (folder.rfind("python", 0) != 0 || folder.size() == 6) return false;
  return std::all_of(folder.begin() + 6, folder.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace

bool is_user_frame(const SnapshotFrame& frame) {
  const std::string& f = frame.filename;
  if (f.size() < 3 || f.compare(f.size() - 3, 3, ".py") != 0) return false;
  std::vector<std::string> folders;
  std::string part;
  for (const char c : f) {
    if (c == '/' || c == '\\') {
      folders.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  bool in_python_library = false;
  for (const std::string& folder : folders) {
    if (folder == "torch") return false;
    if (is_python_library_folder(folder)) in_python_library = true;
    if (folder == "site-packages" || folder == "dist-packages") in_python_library = false;
  }
  return !in_python_library;
}

std::string frame_label(const SnapshotStack& stack) {
  if (stack.empty()) return "";
  const auto user = std::find_if(stack.begin(), stack.end(), is_user_frame);
  const SnapshotFrame& f = user != stack.end() ? *user : stack.front();
  const std::size_t slash = f.filename.find_last_of("/\\");
  const std::string file = slash == std::string::npos ? f.filename : f.filename.substr(slash + 1);
  return file + ":" + std::to_string(f.line) + ":" + f.name;
}

const std::string& SnapshotTrace::label(std::size_t i) const {
  static const std::string none;
  return stack[i] < 0 ? none : stack_labels[static_cast<std::size_t>(stack[i])];
}

SnapshotTrace snapshot_trace(PyTorchSnapshot snapshot, const std::string& source, std::optional<int> device) {
  SnapshotTrace out;
  out.devices = snapshot.devices();
  if (device) {
    if (*device < 0 || *device >= std::max(out.devices, 1))
      throw std::invalid_argument(source + ": the snapshot has " + std::to_string(out.devices) +
                                  " device(s) (indices 0 to " + std::to_string(std::max(out.devices, 1) - 1) +
                                  "); there is no device " + std::to_string(*device));
    out.device = *device;
  } else {
    for (std::size_t d = 0; d < snapshot.device_traces.size(); ++d)
      if (snapshot.device_traces[d].size() > snapshot.device_traces[static_cast<std::size_t>(out.device)].size())
        out.device = static_cast<int>(d);
  }
  static const std::vector<SnapshotEvent> no_events;
  const std::vector<SnapshotEvent>& events = static_cast<std::size_t>(out.device) < snapshot.device_traces.size()
                                                 ? snapshot.device_traces[static_cast<std::size_t>(out.device)]
                                                 : no_events;
  out.entries = events.size();
  const std::string where = source + ": device_traces[" + std::to_string(out.device) + "][";

  // A trace recorded without free_completed (skip_actions) frees at free_requested.
  SnapshotAction free_action = SnapshotAction::free_completed;
  const auto count = [&](SnapshotAction a) {
    return std::count_if(events.begin(), events.end(), [a](const SnapshotEvent& e) { return e.action == a; });
  };
  if (count(SnapshotAction::free_completed) == 0 && count(SnapshotAction::free_requested) > 0)
    free_action = SnapshotAction::free_requested;

  // The segments' blocks of this device, by address, as the snapshot ends.
  std::unordered_map<std::uint64_t, const SnapshotBlock*> end_blocks;
  std::unordered_map<std::uint64_t, std::int64_t> end_block_stream;
  std::uint64_t end_reserved = 0;
  for (const SnapshotSegment& seg : snapshot.segments) {
    if (seg.device != out.device) continue;
    end_reserved = saturating_add(end_reserved, seg.total_size);
    for (const SnapshotBlock& b : seg.blocks) {
      end_blocks[b.address] = &b;
      end_block_stream[b.address] = seg.stream;
    }
  }

  Events start, main;
  Ids ids;
  std::unordered_map<std::uint64_t, LiveBlock> live;
  std::unordered_map<std::uint64_t, std::size_t> freed_at;  // addresses the trace has freed, with the entry
  std::vector<ReservedChange> relative_reserved;  // reserved_bytes: relative to the start, as an int64
  std::int64_t reserved = 0, lowest_reserved = 0;
  constexpr std::uint64_t kMostSegmentBytes = std::uint64_t{1} << 52;

  for (std::size_t k = 0; k < events.size(); ++k) {
    const SnapshotEvent& e = events[k];
    const auto at = [&] { return where + std::to_string(k) + "]: "; };  // built only for an error
    switch (e.action) {
      case SnapshotAction::alloc: {
        if (const auto it = live.find(e.addr); it != live.end())
          throw std::invalid_argument(at() + "alloc at " + hex(e.addr) + ", which is still allocated (since entry " +
                                      std::to_string(it->second.since) + ")");
        if (e.size > kMaxTraceBlockBytes)
          throw std::invalid_argument(at() + "alloc of " + std::to_string(e.size) + " bytes (at most 2^48)");
        LiveBlock block{-1, static_cast<std::size_t>(e.size), e.stack, k};
        if (block.bytes > 0) {
          block.id = ids.take(block.stack, block.bytes);
          main.add({TraceEvent::Kind::alloc, block.id, block.bytes}, e.stream, e.stack, static_cast<std::int64_t>(k));
        }
        live[e.addr] = block;
        freed_at.erase(e.addr);
        break;
      }
      case SnapshotAction::free_requested:
      case SnapshotAction::free_completed: {
        if (e.action != free_action) break;
        if (const auto it = live.find(e.addr); it != live.end()) {
          const LiveBlock block = it->second;
          live.erase(it);
          freed_at[e.addr] = k;
          if (block.id < 0) break;
          main.add({TraceEvent::Kind::free, block.id}, e.stream, e.stack, static_cast<std::int64_t>(k));
          ids.give_back(block.stack, block.bytes, block.id);
          break;
        }
        if (const auto it = freed_at.find(e.addr); it != freed_at.end())
          throw std::invalid_argument(at() + action_name(e.action) + " of " + hex(e.addr) +
                                      ", which is not allocated (freed at entry " + std::to_string(it->second) + ")");
        // Live when the trace began: allocated before its first entry.
        freed_at[e.addr] = k;
        std::uint64_t bytes = e.size;
        int stack = e.stack;
        if (bytes == 0)
          if (const auto b = end_blocks.find(e.addr); b != end_blocks.end()) bytes = b->second->requested_size;
        if (bytes == 0) break;
        if (bytes > kMaxTraceBlockBytes)
          throw std::invalid_argument(at() + action_name(e.action) + " of a block of " + std::to_string(bytes) +
                                      " bytes (at most 2^48)");
        // A fresh id: no event before this one used it, so it can be live
        // from the start. It is not given back for reuse: its frames are
        // where it was freed, not where it was allocated, so its call site
        // is not the key later allocs are matched by.
        const std::int64_t id = ids.fresh();
        start.add({TraceEvent::Kind::alloc, id, static_cast<std::size_t>(bytes)}, e.stream, stack, -1);
        main.add({TraceEvent::Kind::free, id}, e.stream, e.stack, static_cast<std::int64_t>(k));
        break;
      }
      case SnapshotAction::segment_alloc:
      case SnapshotAction::segment_free:
      case SnapshotAction::segment_map:
      case SnapshotAction::segment_unmap: {
        if (e.size > kMostSegmentBytes)
          throw std::invalid_argument(at() + action_name(e.action) + " of " + std::to_string(e.size) +
                                      " bytes (at most 2^52)");
        const bool grows = e.action == SnapshotAction::segment_alloc || e.action == SnapshotAction::segment_map;
        const std::int64_t delta = grows ? static_cast<std::int64_t>(e.size) : -static_cast<std::int64_t>(e.size);
        if (__builtin_add_overflow(reserved, delta, &reserved))
          throw std::invalid_argument(at() + "the reserved bytes overflow 64 bits");
        lowest_reserved = std::min(lowest_reserved, reserved);
        relative_reserved.push_back({k, main.trace.size(), static_cast<std::uint64_t>(reserved)});
        break;
      }
      case SnapshotAction::oom:
        out.ooms.push_back({k, main.trace.size(), e.size, e.device_free, e.stream});
        break;
      case SnapshotAction::snapshot:
        break;
    }
  }

  // Blocks the snapshot ends with allocated that the trace never mentions
  // were live all along (the segments' state "inactive" is free memory;
  // active_allocated and active_pending_free still hold theirs).
  std::vector<std::pair<std::uint64_t, const SnapshotBlock*>> throughout;
  for (const auto& [address, block] : end_blocks)
    if (block->state != "inactive" && !live.count(address) && !freed_at.count(address))
      throughout.emplace_back(address, block);
  std::sort(throughout.begin(), throughout.end());
  for (const auto& [address, block] : throughout) {
    if (block->requested_size == 0) continue;
    if (block->requested_size > kMaxTraceBlockBytes)
      throw std::invalid_argument(source + ": a segment block at " + hex(address) + " of " +
                                  std::to_string(block->requested_size) + " bytes (at most 2^48)");
    const auto bytes = static_cast<std::size_t>(block->requested_size);
    start.add({TraceEvent::Kind::alloc, ids.fresh(), bytes}, end_block_stream[address],
              block->stack, -1);
  }

  // Join: the live-at-start allocs, then the trace's own events.
  out.live_at_start = start.trace.size();
  for (Events* part : {&start, &main}) {
    out.trace.insert(out.trace.end(), part->trace.begin(), part->trace.end());
    out.stack.insert(out.stack.end(), part->stack.begin(), part->stack.end());
    out.entry.insert(out.entry.end(), part->entry.begin(), part->entry.end());
  }
  std::vector<std::int64_t> handles = start.stream_handle;
  handles.insert(handles.end(), main.stream_handle.begin(), main.stream_handle.end());
  out.streams = handles;
  std::sort(out.streams.begin(), out.streams.end());
  out.streams.erase(std::unique(out.streams.begin(), out.streams.end()), out.streams.end());
  out.stream.reserve(handles.size());
  for (const std::int64_t h : handles)
    out.stream.push_back(static_cast<int>(std::lower_bound(out.streams.begin(), out.streams.end(), h) - out.streams.begin()));
  for (std::size_t i = 0; i < out.trace.size(); ++i) out.trace[i].stream = out.stream[i];  // pytorch keeps blocks per stream
  std::vector<std::vector<SnapshotEvent>>().swap(snapshot.device_traces);  // `events` is read
  out.stacks = std::move(snapshot.stacks);
  out.stack_labels.reserve(out.stacks.size());
  for (const SnapshotStack& s : out.stacks) out.stack_labels.push_back(frame_label(s));

  // The trace's own figures.
  std::unordered_map<std::int64_t, std::size_t> bytes_of;
  std::uint64_t allocated = 0;
  for (const TraceEvent& e : out.trace) {
    if (e.kind == TraceEvent::Kind::alloc) {
      bytes_of[e.id] = e.bytes;
      allocated = saturating_add(allocated, e.bytes);
      out.peak_requested = std::max(out.peak_requested, allocated);
    } else if (const auto it = bytes_of.find(e.id); it != bytes_of.end()) {
      allocated -= std::min<std::uint64_t>(allocated, it->second);
      bytes_of.erase(it);
    }
  }
  // The reserved bytes at the start: what the segments hold at the end less
  // what the trace added, at least what keeps the sequence non-negative.
  const auto end = static_cast<std::int64_t>(std::min<std::uint64_t>(end_reserved, std::uint64_t{1} << 62));
  std::int64_t at_start = 0;
  if (__builtin_sub_overflow(end, reserved, &at_start))
    throw std::invalid_argument(where.substr(0, where.size() - 1) + ": the reserved bytes overflow 64 bits");
  at_start = std::max(at_start, -lowest_reserved);
  out.reserved_at_start = static_cast<std::uint64_t>(at_start);
  out.peak_reserved = out.reserved_at_start;
  for (const ReservedChange& r : relative_reserved) {
    std::int64_t value = 0;
    if (__builtin_add_overflow(at_start, static_cast<std::int64_t>(r.reserved_bytes), &value))
      throw std::invalid_argument(where + std::to_string(r.entry) + "]: the reserved bytes overflow 64 bits");
    out.reserved.push_back({r.entry, out.live_at_start + r.trace_events, static_cast<std::uint64_t>(value)});
    out.peak_reserved = std::max(out.peak_reserved, static_cast<std::uint64_t>(value));
  }
  for (SnapshotOom& o : out.ooms) o.trace_events += out.live_at_start;
  return out;
}

}  // namespace tidepool
