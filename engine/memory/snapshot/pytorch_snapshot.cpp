#include "engine/memory/snapshot/pytorch_snapshot.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace tidepool {

namespace {

using Value = PlainData::Value;
using Kind = PlainData::Kind;

// Where a value lies in the snapshot ("device_traces[0][17].size"), for
// messages: a chain of the places walked through, on the stack, whose text
// is built only when an error is reported.
struct Path {
  const Path* parent = nullptr;  // nullptr: the snapshot itself
  const char* key = nullptr;     // a field of the parent; nullptr: an item
  std::size_t index = 0;         // the item's index
  Path field(const char* k) const { return {this, k, 0}; }
  Path item(std::size_t i) const { return {this, nullptr, i}; }
  std::string text() const {
    if (!parent) return "the snapshot";
    std::string above = parent->parent ? parent->text() : "";
    if (key) return above.empty() ? key : above + "." + key;
    return above + "[" + std::to_string(index) + "]";
  }
};

// Reads fields of the snapshot's values, naming their path in every error.
class Reader {
 public:
  Reader(const PlainData& data, const std::string& source) : data_(data), source_(source) {}

  const PlainData& data() const { return data_; }
  [[noreturn]] void fail(const Path& path, const std::string& what) const {
    throw std::invalid_argument(source_ + ": " + path.text() + ": " + what);
  }
  const Value& object(const Value& v, const Path& path) const {
    if (v.kind != Kind::dict) fail(path, std::string("expected a dict, got ") + kind_name(v.kind));
    return v;
  }
  // A list or tuple (json.dump writes both as arrays).
  std::span<const Value> list(const Value& v, const Path& path) const {
    if (v.kind != Kind::list && v.kind != Kind::tuple) fail(path, std::string("expected a list, got ") + kind_name(v.kind));
    return data_.items(v);
  }
  // The field, or nullptr when absent.
  const Value* find(const Value& object, const char* key) const { return data_.find(object, key); }
  const Value& field(const Value& object, const char* key, const Path& path) const {
    const Value* v = find(object, key);
    if (!v) fail(path, std::string("has no '") + key + "'");
    return *v;
  }
  std::uint64_t unsigned_integer(const Value& v, const Path& path) const {
    if (v.kind == Kind::unsigned_integer) return v.unsigned_integer;
    if (v.kind == Kind::integer && v.integer >= 0) return static_cast<std::uint64_t>(v.integer);
    fail(path, std::string("expected a non-negative integer, got ") +
                   (v.kind == Kind::integer ? "a negative one" : kind_name(v.kind)));
  }
  std::int64_t integer(const Value& v, const Path& path) const {
    if (v.kind == Kind::integer) return v.integer;
    fail(path, std::string("expected an integer of 64 bits, got ") +
                   (v.kind == Kind::unsigned_integer ? "a larger one" : kind_name(v.kind)));
  }
  const std::string& string(const Value& v, const Path& path) const {
    if (v.kind != Kind::string) fail(path, std::string("expected a string, got ") + kind_name(v.kind));
    return data_.text(v);
  }
  std::uint64_t unsigned_field(const Value& o, const char* key, const Path& path) const {
    return unsigned_integer(field(o, key, path), path.field(key));
  }
  std::int64_t integer_field_or(const Value& o, const char* key, const Path& path, std::int64_t absent) const {
    const Value* v = find(o, key);
    return v ? integer(*v, path.field(key)) : absent;
  }

 private:
  const PlainData& data_;
  const std::string& source_;
};

std::optional<SnapshotAction> action_of(const std::string& name) {
  static const std::pair<const char*, SnapshotAction> names[] = {
      {"alloc", SnapshotAction::alloc},
      {"free_requested", SnapshotAction::free_requested},
      {"free_completed", SnapshotAction::free_completed},
      {"free", SnapshotAction::free_completed},  // older snapshots' name for it
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
// sites many times. A pickle shares one frames list between every entry of
// a call site (PyTorch's and pickle's memo), so a list is read once per
// container, then once per distinct content (JSON repeats the lists).
class Stacks {
 public:
  Stacks(const Reader& r, std::vector<SnapshotStack>& stacks)
      : r_(r), stacks_(stacks), of_container_(r.data().containers(), kUnread) {}

  // The index of `frames` (a list of frame dicts; absent or empty: -1).
  int intern(const Value* frames, const Path& path) {
    if (!frames || frames->kind == Kind::none) return -1;
    const std::span<const Value> items = r_.list(*frames, path);
    int& known = of_container_[frames->ref];
    if (known != kUnread) return known;
    SnapshotStack stack;
    stack.reserve(items.size());
    std::string key;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Path at = path.item(k);
      const Value& f = r_.object(items[k], at);
      SnapshotFrame frame;
      if (const Value* v = r_.find(f, "filename")) frame.filename = r_.string(*v, at.field("filename"));
      if (const Value* v = r_.find(f, "line")) frame.line = r_.integer(*v, at.field("line"));
      if (const Value* v = r_.find(f, "name")) frame.name = r_.string(*v, at.field("name"));
      key += frame.filename + '\0' + std::to_string(frame.line) + '\0' + frame.name + '\0';
      stack.push_back(std::move(frame));
    }
    if (stack.empty()) return known = -1;
    const auto [it, added] = index_.emplace(std::move(key), static_cast<int>(stacks_.size()));
    if (added) stacks_.push_back(std::move(stack));
    return known = it->second;
  }

 private:
  static constexpr int kUnread = -2;
  const Reader& r_;
  std::vector<SnapshotStack>& stacks_;
  std::vector<int> of_container_;  // per container of the data: its stack, -1 or kUnread
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

PyTorchSnapshot read_pytorch_snapshot(const PlainData& data, const std::string& source) {
  const Reader r(data, source);
  const Path root;
  const Value& snapshot = r.object(data.root(), root);
  PyTorchSnapshot out;
  Stacks stacks(r, out.stacks);

  const Value* traces = r.find(snapshot, "device_traces");
  if (traces) {
    const Path traces_path = root.field("device_traces");
    const std::span<const Value> devices = r.list(*traces, traces_path);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      const Path device_path = traces_path.item(d);
      const std::span<const Value> entries = r.list(devices[d], device_path);
      std::vector<SnapshotEvent>& events = out.device_traces.emplace_back();
      events.reserve(entries.size());
      for (std::size_t k = 0; k < entries.size(); ++k) {
        const Path path = device_path.item(k);
        const Value& e = r.object(entries[k], path);
        const std::optional<SnapshotAction> action = action_of(r.string(r.field(e, "action", path), path.field("action")));
        if (!action) {
          ++out.unknown_actions;
          continue;
        }
        SnapshotEvent event;
        event.action = *action;
        if (event.action == SnapshotAction::oom) {
          if (const Value* v = r.find(e, "device_free")) event.device_free = r.unsigned_integer(*v, path.field("device_free"));
        } else if (event.action != SnapshotAction::snapshot) {
          event.addr = r.unsigned_field(e, "addr", path);
        }
        // A `snapshot` entry's size (the bytes active then) is kept where it has one, so a writer gives it back.
        if (event.action != SnapshotAction::snapshot || r.find(e, "size")) event.size = r.unsigned_field(e, "size", path);
        event.stream = r.integer_field_or(e, "stream", path, 0);
        if (const Value* v = r.find(e, "time_us")) event.time_us = r.integer(*v, path.field("time_us"));
        event.stack = stacks.intern(r.find(e, "frames"), path.field("frames"));
        events.push_back(event);
      }
    }
  }

  const Value* segments = r.find(snapshot, "segments");
  if (segments) {
    const Path segments_path = root.field("segments");
    const std::span<const Value> all = r.list(*segments, segments_path);
    for (std::size_t s = 0; s < all.size(); ++s) {
      const Path path = segments_path.item(s);
      const Value& seg = r.object(all[s], path);
      SnapshotSegment segment;
      const std::int64_t device = r.integer_field_or(seg, "device", path, 0);
      if (device < 0 || device > 1023) r.fail(path.field("device"), "expected a device index 0 to 1023, got " + std::to_string(device));
      segment.device = static_cast<int>(device);
      segment.address = r.unsigned_field(seg, "address", path);
      segment.total_size = r.unsigned_field(seg, "total_size", path);
      segment.stream = r.integer_field_or(seg, "stream", path, 0);
      if (const Value* v = r.find(seg, "segment_type")) segment.segment_type = r.string(*v, path.field("segment_type"));
      if (const Value* blocks = r.find(seg, "blocks")) {
        const Path blocks_path = path.field("blocks");
        const std::span<const Value> items = r.list(*blocks, blocks_path);
        for (std::size_t b = 0; b < items.size(); ++b) {
          const Path block_path = blocks_path.item(b);
          const Value& blk = r.object(items[b], block_path);
          SnapshotBlock block;
          block.size = r.unsigned_field(blk, "size", block_path);
          block.requested_size = r.find(blk, "requested_size") ? r.unsigned_field(blk, "requested_size", block_path)
                                                               : block.size;
          // Older snapshots leave out a block's address: blocks tile their segment in order.
          block.address = r.find(blk, "address") ? r.unsigned_field(blk, "address", block_path)
                          : segment.blocks.empty()
                              ? segment.address
                              : segment.blocks.back().address + segment.blocks.back().size;
          block.state = r.string(r.field(blk, "state", block_path), block_path.field("state"));
          block.stack = stacks.intern(r.find(blk, "frames"), block_path.field("frames"));
          segment.blocks.push_back(std::move(block));
        }
      }
      out.segments.push_back(std::move(segment));
    }
  }
  if (!traces && !segments)
    r.fail(root, "has neither 'device_traces' nor 'segments' (is it a PyTorch memory snapshot?)");
  return out;
}

}  // namespace tidepool

namespace tidepool {

namespace {

// Builds the snapshot's value graph, one field at a time.
class DataBuilder {
 public:
  explicit DataBuilder(PlainData& data) : data_(data) {}

  Value dict() { return data_.add_container(Kind::dict); }
  Value list() { return data_.add_container(Kind::list); }
  // One string value per distinct key or word: a dict's keys repeat in
  // every entry, and pickle's memo then writes each once.
  Value string(const std::string& s) {
    const auto [it, added] = strings_.try_emplace(s);
    if (added) it->second = data_.add_string(s, Kind::string);
    return it->second;
  }
  void set(const Value& dict, const char* key, const Value& value) { data_.add_entry(dict, string(key), value); }
  void set(const Value& dict, const char* key, const std::string& text) { set(dict, key, string(text)); }
  PlainData& data() { return data_; }

 private:
  PlainData& data_;
  std::unordered_map<std::string, Value> strings_;
};

}  // namespace

PlainData snapshot_data(const PyTorchSnapshot& snapshot) {
  PlainData data;
  DataBuilder b(data);
  // One frames list per stack, shared by every entry and block that has it.
  std::vector<Value> frames;
  frames.reserve(snapshot.stacks.size());
  for (const SnapshotStack& stack : snapshot.stacks) {
    const Value list = b.list();
    for (const SnapshotFrame& f : stack) {
      const Value frame = b.dict();
      b.set(frame, "filename", f.filename);
      b.set(frame, "line", Value::of_int(f.line));
      b.set(frame, "name", f.name);
      data.append(list, frame);
    }
    frames.push_back(list);
  }

  const Value root = b.dict();
  const Value segments = b.list();
  for (const SnapshotSegment& s : snapshot.segments) {
    const Value seg = b.dict();
    std::uint64_t allocated = 0, active = 0, requested = 0;
    const Value blocks = b.list();
    for (const SnapshotBlock& k : s.blocks) {
      const Value block = b.dict();
      b.set(block, "address", Value::of_uint(k.address));
      b.set(block, "size", Value::of_uint(k.size));
      b.set(block, "requested_size", Value::of_uint(k.requested_size));
      b.set(block, "state", k.state);
      b.set(block, "frames", k.stack >= 0 ? frames[static_cast<std::size_t>(k.stack)] : b.list());
      data.append(blocks, block);
      if (k.state == "active_allocated") allocated += k.size;
      if (k.state != "inactive") active += k.size;
      requested += k.requested_size;
    }
    b.set(seg, "device", Value::of_int(s.device));
    b.set(seg, "address", Value::of_uint(s.address));
    b.set(seg, "total_size", Value::of_uint(s.total_size));
    b.set(seg, "allocated_size", Value::of_uint(allocated));
    b.set(seg, "active_size", Value::of_uint(active));
    b.set(seg, "requested_size", Value::of_uint(requested));
    b.set(seg, "stream", Value::of_int(s.stream));
    b.set(seg, "segment_type", s.segment_type);
    b.set(seg, "segment_pool_id", data.add_container(Kind::tuple, {Value::of_int(0), Value::of_int(0)}));
    b.set(seg, "is_expandable", Value::of_bool(false));
    b.set(seg, "frames", b.list());
    b.set(seg, "blocks", blocks);
    data.append(segments, seg);
  }
  b.set(root, "segments", segments);

  const Value traces = b.list();
  for (const std::vector<SnapshotEvent>& events : snapshot.device_traces) {
    const Value trace = b.list();
    for (const SnapshotEvent& e : events) {
      const Value entry = b.dict();
      b.set(entry, "action", action_name(e.action));
      if (e.action != SnapshotAction::oom) b.set(entry, "addr", Value::of_uint(e.addr));
      b.set(entry, "size", Value::of_uint(e.size));
      b.set(entry, "stream", Value::of_int(e.stream));
      if (e.time_us) b.set(entry, "time_us", Value::of_int(*e.time_us));
      if (e.action == SnapshotAction::oom) b.set(entry, "device_free", Value::of_uint(e.device_free));
      if (e.stack >= 0) b.set(entry, "frames", frames[static_cast<std::size_t>(e.stack)]);
      data.append(trace, entry);
    }
    data.append(traces, trace);
  }
  b.set(root, "device_traces", traces);
  data.set_root(root);
  return data;
}

}  // namespace tidepool
