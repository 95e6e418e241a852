#include "engine/memory/snapshot/plain_data.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace tidepool {

namespace {

// What a std::string holds beyond its header: nothing while it fits the
// short-string buffer (15 bytes in libstdc++ and libc++'s 22), else its
// bytes and a terminator.
std::size_t heap_bytes(std::size_t length) { return length > 15 ? length + 1 : 0; }

// Runs `add` on `v` and returns the bytes its capacity grew by.
template <class T, class Add>
std::size_t growth(std::vector<T>& v, Add add) {
  const std::size_t before = v.capacity();
  add();
  return (v.capacity() - before) * sizeof(T);
}

}  // namespace

const PlainData::Value* PlainData::find(const Value& dict, std::string_view key) const {
  const std::span<const Entry> e = entries(dict);
  for (auto it = e.rbegin(); it != e.rend(); ++it)
    if (it->first.kind == Kind::string && strings_[it->first.ref] == key) return &it->second;
  return nullptr;
}

PlainData::Value PlainData::add_string(std::string_view s, Kind kind) {
  Value v;
  v.kind = kind;
  v.ref = static_cast<std::uint32_t>(strings_.size());
  spent_ += growth(strings_, [&] { strings_.emplace_back(s); }) + heap_bytes(s.size());
  return v;
}

PlainData::Value PlainData::add_container(Kind kind, std::vector<Value> items) {
  Value v;
  v.kind = kind;
  v.ref = static_cast<std::uint32_t>(containers_.size());
  spent_ += items.capacity() * sizeof(Value);
  spent_ += growth(containers_, [&] { containers_.push_back({std::move(items), {}}); });
  return v;
}

void PlainData::append(const Value& container, const Value& item) {
  std::vector<Value>& items = containers_[container.ref].items;
  spent_ += growth(items, [&] { items.push_back(item); });
}

void PlainData::append(const Value& container, std::span<const Value> more) {
  std::vector<Value>& items = containers_[container.ref].items;
  spent_ += growth(items, [&] { items.insert(items.end(), more.begin(), more.end()); });
}

void PlainData::add_entry(const Value& dict, const Value& key, const Value& value) {
  std::vector<Entry>& entries = containers_[dict.ref].entries;
  spent_ += growth(entries, [&] { entries.emplace_back(key, value); });
}

const char* kind_name(PlainData::Kind kind) {
  using Kind = PlainData::Kind;
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "bool";
    case Kind::integer:
    case Kind::unsigned_integer: return "integer";
    case Kind::floating: return "float";
    case Kind::string: return "string";
    case Kind::bytes: return "bytes";
    case Kind::list: return "list";
    case Kind::tuple: return "tuple";
    case Kind::dict: return "dict";
    case Kind::set: return "set";
  }
  return "?";
}

namespace {

// Depth-first over the graph with each container's height remembered, so a
// container shared many times is walked once: the tree's depth at a
// reference is the depth there plus the container's height.
class NestingCheck {
 public:
  NestingCheck(const PlainData& data, int max_depth)
      : data_(data), max_depth_(max_depth), height_(data.containers(), kUnvisited) {}

  std::string problem() {
    if (data_.root().is_container()) visit(data_.root(), 1);
    return problem_;
  }

 private:
  static constexpr int kUnvisited = 0, kOpen = -1;

  // The height of the container `v`, reached at `depth`; 0 once a problem is found.
  int visit(const PlainData::Value& v, int depth) {
    if (height_[v.ref] == kOpen) {
      problem_ = "a container that contains itself";
      return 0;
    }
    if (height_[v.ref] == kUnvisited) {
      if (depth > max_depth_) return too_deep();
      height_[v.ref] = kOpen;
      int below = 0;
      const auto child = [&](const PlainData::Value& c) {
        if (!c.is_container()) return true;
        const int h = visit(c, depth + 1);
        below = std::max(below, h);
        return h > 0;
      };
      if (v.kind == PlainData::Kind::dict) {
        for (const PlainData::Entry& e : data_.entries(v))
          if (!child(e.second)) return 0;
      } else {
        for (const PlainData::Value& item : data_.items(v))
          if (!child(item)) return 0;
      }
      height_[v.ref] = below + 1;
    }
    if (depth + height_[v.ref] - 1 > max_depth_) return too_deep();
    return height_[v.ref];
  }
  int too_deep() {
    problem_ = "containers nested deeper than " + std::to_string(max_depth_);
    return 0;
  }

  const PlainData& data_;
  int max_depth_;
  std::vector<int> height_;
  std::string problem_;
};

// nlohmann's SAX events into a PlainData. Strings are interned (a JSON file
// repeats every key and file name), so the graph holds each once.
class JsonBuilder {
 public:
  JsonBuilder(PlainData& out, const PlainDataLimits& limits) : out_(out), limits_(limits) {}

  bool null() { return add(PlainData::Value{}); }
  bool boolean(bool b) { return add(PlainData::Value::of_bool(b)); }
  bool number_integer(std::int64_t i) { return add(PlainData::Value::of_int(i)); }
  bool number_unsigned(std::uint64_t u) {
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) return number_integer(static_cast<std::int64_t>(u));
    return add(PlainData::Value::of_uint(u));
  }
  bool number_float(double d, const std::string&) { return add(PlainData::Value::of_float(d)); }
  bool string(std::string& s) { return add(intern(s)); }
  bool binary(nlohmann::json::binary_t&) { return stop("binary data, which JSON text does not have"); }
  bool key(std::string& s) {
    key_ = intern(s);
    return check();
  }
  bool start_object(std::size_t) { return open(PlainData::Kind::dict); }
  bool start_array(std::size_t) { return open(PlainData::Kind::list); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) {
    error_ = e.what();
    parse_error_ = true;
    return false;
  }

  const std::string& error() const { return error_; }
  bool is_parse_error() const { return parse_error_; }

 private:
  bool add(const PlainData::Value& v) {
    if (open_.empty()) {
      out_.set_root(v);
    } else if (open_.back().kind == PlainData::Kind::dict) {
      out_.add_entry(open_.back(), key_, v);
    } else {
      out_.append(open_.back(), v);
    }
    return check();
  }
  bool open(PlainData::Kind kind) {
    if (static_cast<int>(open_.size()) >= limits_.max_depth)
      return stop("containers nested deeper than " + std::to_string(limits_.max_depth));
    const PlainData::Value v = out_.add_container(kind);
    if (!add(v)) return false;
    const std::size_t before = open_.capacity();
    open_.push_back(v);
    out_.charge((open_.capacity() - before) * sizeof(PlainData::Value));
    return check();
  }
  bool close() {
    open_.pop_back();
    return true;
  }
  PlainData::Value intern(const std::string& s) {
    const auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    const PlainData::Value v = out_.add_string(s, PlainData::Kind::string);
    strings_.emplace(s, v);
    out_.charge(64 + heap_bytes(s.size()));  // a hash node with its key
    return v;
  }
  bool check() {
    if (!out_.over_budget()) return true;
    return stop("the data takes more than " + std::to_string(out_.max_memory_bytes()) + " bytes of memory");
  }
  bool stop(const std::string& why) {
    error_ = why;
    return false;
  }

  PlainData& out_;
  const PlainDataLimits& limits_;
  std::vector<PlainData::Value> open_;  // the containers being read, outermost first
  PlainData::Value key_;
  std::unordered_map<std::string, PlainData::Value> strings_;
  std::string error_;
  bool parse_error_ = false;
};

// Expands the graph into a JSON tree, counting what the tree takes.
class JsonWriter {
 public:
  JsonWriter(const PlainData& data, const std::string& source, const PlainDataLimits& limits)
      : data_(data), source_(source), limits_(limits), open_(data.containers(), false) {}

  nlohmann::json write(const PlainData::Value& v, int depth) {
    using Kind = PlainData::Kind;
    spend(sizeof(nlohmann::json));
    switch (v.kind) {
      case Kind::none: return nullptr;
      case Kind::boolean: return v.flag;
      case Kind::integer: return v.integer;
      case Kind::unsigned_integer: return v.unsigned_integer;
      case Kind::floating: return v.floating;
      case Kind::string: spend(sizeof(std::string) + heap_bytes(data_.text(v).size())); return data_.text(v);
      case Kind::bytes: {
        const std::string& s = data_.text(v);
        spend(64 + s.size());
        return nlohmann::json::binary(std::vector<std::uint8_t>(s.begin(), s.end()));
      }
      default: break;
    }
    if (depth > limits_.max_depth) fail("containers nested deeper than " + std::to_string(limits_.max_depth));
    if (open_[v.ref]) fail("a container that contains itself");
    open_[v.ref] = true;
    nlohmann::json out;
    if (v.kind == Kind::dict) {
      out = nlohmann::json::object();
      for (const auto& [key, value] : data_.entries(v)) {
        std::string text = key_text(key);
        spend(64 + heap_bytes(text.size()));  // a map node with its key
        out[std::move(text)] = write(value, depth + 1);
      }
    } else {
      out = nlohmann::json::array();
      for (const PlainData::Value& item : data_.items(v)) out.push_back(write(item, depth + 1));
    }
    open_[v.ref] = false;
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw std::invalid_argument(source_ + ": " + what); }
  void spend(std::size_t bytes) {
    spent_ += bytes;
    if (spent_ > limits_.max_output_bytes)
      fail("the data expands past " + std::to_string(limits_.max_output_bytes) +
           " bytes (values referenced many times through the memo)");
  }
  std::string key_text(const PlainData::Value& key) const {
    switch (key.kind) {
      case PlainData::Kind::string: return data_.text(key);
      case PlainData::Kind::integer: return std::to_string(key.integer);
      case PlainData::Kind::unsigned_integer: return std::to_string(key.unsigned_integer);
      case PlainData::Kind::boolean: return key.flag ? "true" : "false";
      default: return "null";
    }
  }

  const PlainData& data_;
  const std::string& source_;
  const PlainDataLimits& limits_;
  std::vector<bool> open_;
  std::size_t spent_ = 0;
};

}  // namespace

std::string nesting_problem(const PlainData& data, int max_depth) { return NestingCheck(data, max_depth).problem(); }

PlainData read_json_data(std::string_view bytes, const std::string& source, const PlainDataLimits& limits) {
  PlainData out(limits.max_memory_bytes);
  JsonBuilder builder(out, limits);
  if (!nlohmann::json::sax_parse(bytes.data(), bytes.data() + bytes.size(), &builder)) {
    throw std::invalid_argument(source + ": " + (builder.is_parse_error() ? "not valid JSON: " : "") + builder.error());
  }
  return out;
}

nlohmann::json plain_data_json(const PlainData& data, const std::string& source, const PlainDataLimits& limits) {
  return JsonWriter(data, source, limits).write(data.root(), 1);
}

}  // namespace tidepool
