// Python's plain data (None, bools, ints, floats, str, bytes, lists,
// tuples, sets, dicts) as a graph of values, the form both of PyTorch's
// snapshot files are read into: a pickle (engine/memory/snapshot/
// pickle_reader.h) and the JSON that json.dump writes for the same object
// (read_json_data below). engine/memory/snapshot/pytorch_snapshot.h reads
// the snapshot from it and cannot tell which file it came from.
//
//   PlainData d = read_json_data(bytes, "snap.json");
//   if (const PlainData::Value* traces = d.find(d.root(), "device_traces"))
//     for (const PlainData::Value& trace : d.items(*traces)) ...
//
// Why a graph and not a JSON tree: a pickle references a value that occurs
// twice through its memo, and PyTorch's snapshots share a lot (each frame
// dict, each frames list of a call site): a 4 MB pickle of 100 000 entries
// expands to hundreds of MB as a tree, and a 100-byte pickle of lists that
// each hold the previous twice to any size. Here a container reached twice
// is one container (the same index), so the graph costs what the file
// holds, and a reader can do the work for a shared value once.
//
// What it costs is counted as it is built (each value, container, string,
// and the reader's own tables: the pickle's stack and memo), and reading
// stops past PlainDataLimits::max_memory_bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidepool {

struct PlainDataLimits {
  // Containers inside containers, counted from the outermost (a snapshot
  // nests six deep: the snapshot, device_traces, a device's trace, an
  // entry, its frames list, a frame).
  int max_depth = 100;
  // The memory the graph and the reader's tables may take, counted as
  // allocated (a vector's capacity, a string's bytes and header).
  std::size_t max_memory_bytes = std::size_t{4} << 30;
  // For plain_data_json only: what the expanded JSON tree may take, each
  // shared value counted at every place it is copied to.
  std::size_t max_output_bytes = std::size_t{4} << 30;
};

class PlainData {
 public:
  enum class Kind : std::uint8_t { none, boolean, integer, unsigned_integer, floating, string, bytes, list, tuple, dict, set };

  // Scalars are held here; strings and containers by their index in the
  // tables, so a container reached twice is the same container.
  struct Value {
    Kind kind = Kind::none;
    std::uint32_t ref = 0;  // strings (string, bytes) or containers (list, tuple, dict, set)
    union {
      bool flag;
      std::int64_t integer;
      std::uint64_t unsigned_integer;
      double floating;
    };
    Value() : integer(0) {}
    // The scalars, for the readers and for data built in code.
    static Value of_bool(bool b) {
      Value v;
      v.kind = Kind::boolean;
      v.flag = b;
      return v;
    }
    static Value of_int(std::int64_t i) {
      Value v;
      v.kind = Kind::integer;
      v.integer = i;
      return v;
    }
    static Value of_uint(std::uint64_t u) {
      Value v;
      v.kind = Kind::unsigned_integer;
      v.unsigned_integer = u;
      return v;
    }
    static Value of_float(double d) {
      Value v;
      v.kind = Kind::floating;
      v.floating = d;
      return v;
    }
    bool is_container() const { return kind >= Kind::list; }
  };
  using Entry = std::pair<Value, Value>;  // a dict's key (str, int, bool or None) and value

  const Value& root() const { return root_; }
  const std::string& text(const Value& v) const { return strings_[v.ref]; }  // string or bytes
  std::span<const Value> items(const Value& v) const { return containers_[v.ref].items; }  // list, tuple, set
  std::span<const Entry> entries(const Value& v) const { return containers_[v.ref].entries; }  // dict
  std::size_t size(const Value& v) const { return v.kind == Kind::dict ? entries(v).size() : items(v).size(); }
  // A dict's value for a str key (the last one, as Python keeps), or nullptr.
  const Value* find(const Value& dict, std::string_view key) const;
  std::size_t containers() const { return containers_.size(); }
  // The memory counted while it was built.
  std::size_t memory_bytes() const { return spent_; }

  // --- building (the pickle and JSON readers) ---
  explicit PlainData(std::size_t max_memory_bytes = std::size_t{4} << 30) : max_memory_(max_memory_bytes) {}
  Value add_string(std::string_view s, Kind kind);  // string or bytes
  Value add_container(Kind kind, std::vector<Value> items = {});
  void append(const Value& container, const Value& item);  // list, tuple, set
  void append(const Value& container, std::span<const Value> items);
  void add_entry(const Value& dict, const Value& key, const Value& value);
  void set_root(const Value& v) { root_ = v; }
  // Counts `bytes` more (a table of the reader's own); the readers check over_budget() after each step.
  void charge(std::size_t bytes) { spent_ += bytes; }
  bool over_budget() const { return spent_ > max_memory_; }
  std::size_t max_memory_bytes() const { return max_memory_; }

 private:
  struct Container {
    std::vector<Value> items;
    std::vector<Entry> entries;
  };
  Value root_;
  std::vector<std::string> strings_;
  std::vector<Container> containers_;
  std::size_t spent_ = 0, max_memory_;
};

// A value for messages: "None", "dict", "list", "string", "bool", "bytes", "float", "integer".
const char* kind_name(PlainData::Kind kind);

// Why the value graph from `root` cannot be a tree no deeper than
// `max_depth` ("containers nested deeper than 100", "a container that
// contains itself"), or "". Each container is visited once.
std::string nesting_problem(const PlainData& data, int max_depth);

// The JSON text `bytes` (as json.dump writes it) as plain data; objects
// become dicts, arrays lists. std::invalid_argument naming `source` for
// text that is not JSON ("snap.json: not valid JSON: ..."), nesting deeper than limits.max_depth or memory
// past limits.max_memory_bytes.
PlainData read_json_data(std::string_view bytes, const std::string& source, const PlainDataLimits& limits = {});

// The data as a JSON tree, each shared value copied into every place, as
// json.dump writes it: None -> null, bool -> boolean, int -> integer,
// float -> number, str -> string, bytes -> binary, list/tuple/set ->
// array, dict -> object with int, bool and None keys as json.dump writes
// them ("12", "true", "null"). For tests and tools on small data:
// std::invalid_argument "<source>: the data expands past N bytes ..." when
// the tree would take more than limits.max_output_bytes.
nlohmann::json plain_data_json(const PlainData& data, const std::string& source, const PlainDataLimits& limits = {});

}  // namespace tidepool
