#include "engine/memory/snapshot/pytorch_snapshot.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace tidepool {

namespace {

using nlohmann::json;

const char* kind_of(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "None";
    case json::value_t::object: return "dict";
    case json::value_t::array: return "list";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "bool";
    case json::value_t::binary: return "bytes";
    case json::value_t::number_float: return "float";
    default: return "integer";
  }
}

// Reads fields of one JSON value, naming its path in every error.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw std::invalid_argument(source_ + ": " + path + ": " + what);
  }
  const json& object(const json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, std::string("expected a dict, got ") + kind_of(j));
    return j;
  }
  const json& list(const json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, std::string("expected a list, got ") + kind_of(j));
    return j;
  }
  // The field, or nullptr when absent.
  const json* find(const json& object, const char* key) const {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  const json& field(const json& object, const char* key, const std::string& path) const {
    const json* j = find(object, key);
    if (!j) fail(path, std::string("has no '") + key + "'");
    return *j;
  }
  std::uint64_t unsigned_integer(const json& j, const std::string& path) const {
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    if (j.is_number_integer() && j.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(j.get<std::int64_t>());
    fail(path, std::string("expected a non-negative integer, got ") +
                   (j.is_number_integer() ? "a negative one" : kind_of(j)));
  }
  std::int64_t integer(const json& j, const std::string& path) const {
    if (j.is_number_integer() && !j.is_number_unsigned()) return j.get<std::int64_t>();
    if (j.is_number_unsigned() && j.get<std::uint64_t>() <= std::numeric_limits<std::int64_t>::max())
      return static_cast<std::int64_t>(j.get<std::uint64_t>());
    fail(path, std::string("expected an integer of 64 bits, got ") + (j.is_number_unsigned() ? "a larger one" : kind_of(j)));
  }
  std::string string(const json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, std::string("expected a string, got ") + kind_of(j));
    return j.get<std::string>();
  }
  std::uint64_t unsigned_field(const json& o, const char* key, const std::string& path) const {
    return unsigned_integer(field(o, key, path), path + "." + key);
  }
  std::int64_t integer_field_or(const json& o, const char* key, const std::string& path, std::int64_t absent) const {
    const json* j = find(o, key);
    return j ? integer(*j, path + "." + key) : absent;
  }

 private:
  const std::string& source_;
};

std::optional<SnapshotAction> action_of(const std::string& name) {
  static const std::pair<const char*, SnapshotAction> names[] = {
      {"alloc", SnapshotAction::alloc},
      {"free_requested", SnapshotAction::free_requested},
      {"free_completed", SnapshotAction::free_completed},
      {"free", SnapshotAction::free_completed},  // PyTorch 2.0's name for it
      {"segment_alloc", SnapshotAction::segment_alloc},
      {"segment_free", SnapshotAction::segment_free},
      {"segment_map", SnapshotAction::segment_map},
      {"segment_unmap", SnapshotAction::segment_unmap},
      {"oom", SnapshotAction::oom},
      {"snapshot", SnapshotAction::snapshot},
  };
  for (const auto& [text, action] : names)
    if (name == text) return action;
  return std::nullopt;
}

// Interns each distinct frames list once: a long trace repeats a few call
// sites many times.
class Stacks {
 public:
  Stacks(const Reader& r, std::vector<SnapshotStack>& stacks) : r_(r), stacks_(stacks) {}

  // The index of `frames` (a list of frame dicts; absent: -1).
  int intern(const json* frames, const std::string& path) {
    if (!frames || frames->is_null()) return -1;
    r_.list(*frames, path);
    SnapshotStack stack;
    stack.reserve(frames->size());
    std::string key;
    for (std::size_t k = 0; k < frames->size(); ++k) {
      const std::string at = path + "[" + std::to_string(k) + "]";
      const json& f = r_.object((*frames)[k], at);
      SnapshotFrame frame;
      if (const json* j = r_.find(f, "filename")) frame.filename = r_.string(*j, at + ".filename");
      if (const json* j = r_.find(f, "line")) frame.line = r_.integer(*j, at + ".line");
      if (const json* j = r_.find(f, "name")) frame.name = r_.string(*j, at + ".name");
      key += frame.filename + '\0' + std::to_string(frame.line) + '\0' + frame.name + '\0';
      stack.push_back(std::move(frame));
    }
    if (stack.empty()) return -1;
    const auto [it, added] = index_.emplace(std::move(key), static_cast<int>(stacks_.size()));
    if (added) stacks_.push_back(std::move(stack));
    return it->second;
  }

 private:
  const Reader& r_;
  std::vector<SnapshotStack>& stacks_;
  std::unordered_map<std::string, int> index_;
};

}  // namespace

const char* action_name(SnapshotAction action) {
  switch (action) {
    case SnapshotAction::alloc: return "alloc";
    case SnapshotAction::free_requested: return "free_requested";
    case SnapshotAction::free_completed: return "free_completed";
    case SnapshotAction::segment_alloc: return "segment_alloc";
    case SnapshotAction::segment_free: return "segment_free";
    case SnapshotAction::segment_map: return "segment_map";
    case SnapshotAction::segment_unmap: return "segment_unmap";
    case SnapshotAction::oom: return "oom";
    case SnapshotAction::snapshot: return "snapshot";
  }
  return "?";
}

int PyTorchSnapshot::devices() const {
  int n = static_cast<int>(device_traces.size());
  for (const SnapshotSegment& s : segments) n = std::max(n, s.device + 1);
  return n;
}

PyTorchSnapshot read_pytorch_snapshot(const json& snapshot, const std::string& source) {
  const Reader r(source);
  r.object(snapshot, "the snapshot");
  PyTorchSnapshot out;
  Stacks stacks(r, out.stacks);

  if (const json* traces = r.find(snapshot, "device_traces")) {
    r.list(*traces, "device_traces");
    for (std::size_t d = 0; d < traces->size(); ++d) {
      const std::string device_path = "device_traces[" + std::to_string(d) + "]";
      const json& entries = r.list((*traces)[d], device_path);
      std::vector<SnapshotEvent>& events = out.device_traces.emplace_back();
      events.reserve(entries.size());
      for (std::size_t k = 0; k < entries.size(); ++k) {
        const std::string path = device_path + "[" + std::to_string(k) + "]";
        const json& e = r.object(entries[k], path);
        const std::optional<SnapshotAction> action = action_of(r.string(r.field(e, "action", path), path + ".action"));
        if (!action) {
          ++out.unknown_actions;
          continue;
        }
        SnapshotEvent event;
        event.action = *action;
        if (event.action == SnapshotAction::oom) {
          if (const json* j = r.find(e, "device_free")) event.device_free = r.unsigned_integer(*j, path + ".device_free");
        } else if (event.action != SnapshotAction::snapshot) {
          event.addr = r.unsigned_field(e, "addr", path);
        }
        if (event.action != SnapshotAction::snapshot) event.size = r.unsigned_field(e, "size", path);
        event.stream = r.integer_field_or(e, "stream", path, 0);
        if (const json* j = r.find(e, "time_us")) event.time_us = r.integer(*j, path + ".time_us");
        event.stack = stacks.intern(r.find(e, "frames"), path + ".frames");
        events.push_back(event);
      }
    }
  }

  if (const json* segments = r.find(snapshot, "segments")) {
    r.list(*segments, "segments");
    for (std::size_t s = 0; s < segments->size(); ++s) {
      const std::string path = "segments[" + std::to_string(s) + "]";
      const json& seg = r.object((*segments)[s], path);
      SnapshotSegment segment;
      const std::int64_t device = r.integer_field_or(seg, "device", path, 0);
      if (device < 0 || device > 1023) r.fail(path + ".device", "expected a device index 0 to 1023, got " + std::to_string(device));
      segment.device = static_cast<int>(device);
      segment.address = r.unsigned_field(seg, "address", path);
      segment.total_size = r.unsigned_field(seg, "total_size", path);
      segment.stream = r.integer_field_or(seg, "stream", path, 0);
      if (const json* j = r.find(seg, "segment_type")) segment.segment_type = r.string(*j, path + ".segment_type");
      if (const json* blocks = r.find(seg, "blocks")) {
        r.list(*blocks, path + ".blocks");
        for (std::size_t b = 0; b < blocks->size(); ++b) {
          const std::string block_path = path + ".blocks[" + std::to_string(b) + "]";
          const json& blk = r.object((*blocks)[b], block_path);
          SnapshotBlock block;
          block.size = r.unsigned_field(blk, "size", block_path);
          block.requested_size = blk.contains("requested_size") ? r.unsigned_field(blk, "requested_size", block_path)
                                                                : block.size;
          // Older snapshots leave out a block's address: blocks tile their segment in order.
          block.address = blk.contains("address") ? r.unsigned_field(blk, "address", block_path)
                          : segment.blocks.empty()
                              ? segment.address
                              : segment.blocks.back().address + segment.blocks.back().size;
          block.state = r.string(r.field(blk, "state", block_path), block_path + ".state");
          block.stack = stacks.intern(r.find(blk, "frames"), block_path + ".frames");
          segment.blocks.push_back(std::move(block));
        }
      }
      out.segments.push_back(std::move(segment));
    }
  }
  if (!snapshot.contains("device_traces") && !snapshot.contains("segments"))
    r.fail("the snapshot", "has neither 'device_traces' nor 'segments' (is it a PyTorch memory snapshot?)");
  return out;
}

}  // namespace tidepool
