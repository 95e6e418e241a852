#include "engine/memory/snapshot/pickle_reader.h"

#include "engine/core/bytes_text.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tidepool {

namespace {

// The opcodes of pickle protocols 0 to 5 (CPython's Lib/pickle.py and
// pickletools.py), each with what this reader does with it.
enum class Treatment : std::uint8_t { read, runs_code, out_of_band, old_protocol };

struct Opcode {
  unsigned char code;
  const char* name;
  Treatment treatment;
};

constexpr Opcode kOpcodes[] = {
    {'(', "MARK", Treatment::read},
    {'.', "STOP", Treatment::read},
    {'0', "POP", Treatment::read},
    {'1', "POP_MARK", Treatment::read},
    {'2', "DUP", Treatment::read},
    {'F', "FLOAT", Treatment::old_protocol},
    {'I', "INT", Treatment::old_protocol},
    {'J', "BININT", Treatment::read},
    {'K', "BININT1", Treatment::read},
    {'L', "LONG", Treatment::old_protocol},
    {'M', "BININT2", Treatment::read},
    {'N', "NONE", Treatment::read},
    {'P', "PERSID", Treatment::runs_code},
    {'Q', "BINPERSID", Treatment::runs_code},
    {'R', "REDUCE", Treatment::runs_code},
    {'S', "STRING", Treatment::old_protocol},
    {'T', "BINSTRING", Treatment::old_protocol},
    {'U', "SHORT_BINSTRING", Treatment::old_protocol},
    {'V', "UNICODE", Treatment::old_protocol},
    {'X', "BINUNICODE", Treatment::read},
    {'a', "APPEND", Treatment::read},
    {'b', "BUILD", Treatment::runs_code},
    {'c', "GLOBAL", Treatment::runs_code},
    {'d', "DICT", Treatment::read},
    {'}', "EMPTY_DICT", Treatment::read},
    {'e', "APPENDS", Treatment::read},
    {'g', "GET", Treatment::read},
    {'h', "BINGET", Treatment::read},
    {'i', "INST", Treatment::runs_code},
    {'j', "LONG_BINGET", Treatment::read},
    {'l', "LIST", Treatment::read},
    {']', "EMPTY_LIST", Treatment::read},
    {'o', "OBJ", Treatment::runs_code},
    {'p', "PUT", Treatment::read},
    {'q', "BINPUT", Treatment::read},
    {'r', "LONG_BINPUT", Treatment::read},
    {'s', "SETITEM", Treatment::read},
    {'t', "TUPLE", Treatment::read},
    {')', "EMPTY_TUPLE", Treatment::read},
    {'u', "SETITEMS", Treatment::read},
    {'G', "BINFLOAT", Treatment::read},
    {0x80, "PROTO", Treatment::read},
    {0x81, "NEWOBJ", Treatment::runs_code},
    {0x82, "EXT1", Treatment::runs_code},
    {0x83, "EXT2", Treatment::runs_code},
    {0x84, "EXT4", Treatment::runs_code},
    {0x85, "TUPLE1", Treatment::read},
    {0x86, "TUPLE2", Treatment::read},
    {0x87, "TUPLE3", Treatment::read},
    {0x88, "NEWTRUE", Treatment::read},
    {0x89, "NEWFALSE", Treatment::read},
    {0x8a, "LONG1", Treatment::read},
    {0x8b, "LONG4", Treatment::read},
    {'B', "BINBYTES", Treatment::read},
    {'C', "SHORT_BINBYTES", Treatment::read},
    {0x8c, "SHORT_BINUNICODE", Treatment::read},
    {0x8d, "BINUNICODE8", Treatment::read},
    {0x8e, "BINBYTES8", Treatment::read},
    {0x8f, "EMPTY_SET", Treatment::read},
    {0x90, "ADDITEMS", Treatment::read},
    {0x91, "FROZENSET", Treatment::read},
    {0x92, "NEWOBJ_EX", Treatment::runs_code},
    {0x93, "STACK_GLOBAL", Treatment::runs_code},
    {0x94, "MEMOIZE", Treatment::read},
    {0x95, "FRAME", Treatment::read},
    {0x96, "BYTEARRAY8", Treatment::read},
    {0x97, "NEXT_BUFFER", Treatment::out_of_band},
    {0x98, "READONLY_BUFFER", Treatment::out_of_band},
};

const Opcode* find_opcode(unsigned char code) {
  for (const Opcode& op : kOpcodes)
    if (op.code == code) return &op;
  return nullptr;
}

std::string hex_byte(unsigned char code) { return "0x" + hex_text(code, 2); }

// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    int more = 0;
    unsigned char low = 0x80, high = 0xbf;  // the allowed range of the second byte
    if (c < 0x80) {
      ++p;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      more = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      more = 2;
      if (c == 0xe0) low = 0xa0;
      if (c == 0xed) high = 0x9f;  // U+D800..U+DFFF are surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      more = 3;
      if (c == 0xf0) low = 0x90;
      if (c == 0xf4) high = 0x8f;
    } else {
      return false;
    }
    if (end - p <= more) return false;
    if (p[1] < low || p[1] > high) return false;
    for (int k = 2; k <= more; ++k)
      if (p[k] < 0x80 || p[k] > 0xbf) return false;
    p += more + 1;
  }
  return true;
}

using Value = PlainData::Value;
using Kind = PlainData::Kind;

// A memo entry's node in std::unordered_map: the key, the value, the link
// and the allocator's header, with its bucket.
constexpr std::size_t kMemoEntryBytes = 64;

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& source, const PlainDataLimits& limits)
      : in_(bytes), source_(source), limits_(limits), out_(limits.max_memory_bytes) {}

  PlainData read() {
    while (pos_ < in_.size()) {
      at_ = pos_;
      const unsigned char code = static_cast<unsigned char>(in_[pos_++]);
      const Opcode* op = find_opcode(code);
      if (!op) fail(hex_byte(code) + " is not a pickle opcode");
      switch (op->treatment) {
        case Treatment::runs_code:
          fail("opcode " + std::string(op->name) + " (" + hex_byte(code) +
               ") would run code; Tidepool reads only plain data");
        case Treatment::out_of_band:
          fail("opcode " + std::string(op->name) + " (" + hex_byte(code) +
               ") asks for an out-of-band buffer, which a file cannot carry");
        case Treatment::old_protocol:
          fail("opcode " + std::string(op->name) + " (" + hex_byte(code) +
               ") is from pickle protocol 0 or 1 or Python 2, which Tidepool does not read (protocols 2 to 5)");
        case Treatment::read:
          break;
      }
      if (at_ == 0 && code != 0x80)
        fail("no PROTO opcode (0x80) first: a pickle of protocol 0 or 1, which Tidepool does not read "
             "(protocols 2 to 5; torch.cuda.memory._dump_snapshot writes one of those)");
      if (code == '.') return finish();
      step(code, op->name);
      if (out_.over_budget())
        fail("reading the data takes more than " + std::to_string(out_.max_memory_bytes()) + " bytes of memory");
    }
    at_ = pos_;
    fail("the pickle ends without STOP (a truncated file?)");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(source_ + ": byte " + std::to_string(at_) + ": " + what);
  }

  // --- input ---
  std::string_view take(std::uint64_t n, const char* what) {
    if (n > in_.size() - pos_)
      fail(std::string(what) + " needs " + std::to_string(n) + " bytes, the input has " +
           std::to_string(in_.size() - pos_) + " left (a truncated file?)");
    const std::string_view s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::uint64_t little_endian(std::size_t n, const char* what) {
    const std::string_view s = take(n, what);
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) v = v << 8 | static_cast<unsigned char>(s[k]);
    return v;
  }
  std::string_view line(const char* what) {
    const std::size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) fail(std::string(what) + " has no end of line (a truncated file?)");
    const std::string_view s = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  // --- the stack ---
  void push(const Value& v) {
    const std::size_t before = stack_.capacity();
    stack_.push_back(v);
    out_.charge((stack_.capacity() - before) * sizeof(Value));
  }
  Value pop(const char* op) {
    if (stack_.size() <= stack_floor()) fail(std::string(op) + " finds no value on the stack");
    Value v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::size_t stack_floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values above the last MARK, which is removed.
  std::vector<Value> pop_to_mark(const char* op) {
    if (marks_.empty()) fail(std::string(op) + " finds no MARK");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }
  Value& top(const char* op) {
    if (stack_.size() <= stack_floor()) fail(std::string(op) + " finds no value on the stack");
    return stack_.back();
  }
  Value container_of(const Value& v, Kind kind, const char* op, const char* wanted) {
    if (v.kind != kind) fail(std::string(op) + " needs a " + wanted + " below its values");
    return v;
  }

  Value make_string(std::string_view s, Kind kind) {
    if (kind == Kind::string && !valid_utf8(s)) fail("a string that is not valid UTF-8");
    return out_.add_string(s, kind);
  }
  Value make_container(Kind kind, std::vector<Value> items = {}) { return out_.add_container(kind, std::move(items)); }
  static Value make_integer(std::int64_t i) { return Value::of_int(i); }

  // LONG1 and LONG4: little-endian two's complement of any length.
  Value make_long(std::string_view bytes) {
    std::size_t n = bytes.size();
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
    // Leading sign bytes carry nothing: 00 before a byte below 0x80, ff before one from 0x80.
    while (n > 1 && ((byte(n - 1) == 0x00 && byte(n - 2) < 0x80) || (byte(n - 1) == 0xff && byte(n - 2) >= 0x80))) --n;
    if (n == 0) return make_integer(0);
    if (n == 9 && byte(8) == 0x00) {  // 2^63 .. 2^64-1
      std::uint64_t u = 0;
      for (std::size_t k = 8; k-- > 0;) u = u << 8 | byte(k);
      return Value::of_uint(u);
    }
    if (n > 8) fail("an integer beyond 64 bits (" + std::to_string(bytes.size()) + " bytes)");
    std::uint64_t u = byte(n - 1) >= 0x80 ? ~std::uint64_t{0} : 0;  // sign-extended
    for (std::size_t k = n; k-- > 0;) u = u << 8 | byte(k);
    std::int64_t i;
    std::memcpy(&i, &u, sizeof i);
    return make_integer(i);
  }

  void check_key(const Value& key, const char* op) {
    switch (key.kind) {
      case Kind::string:
      case Kind::integer:
      case Kind::unsigned_integer:
      case Kind::boolean:
      case Kind::none:
        return;
      default:
        fail(std::string(op) + ": a dict key that is not a str, int, bool or None (JSON keys are strings)");
    }
  }
  void set_items(const Value& dict, const std::vector<Value>& items, const char* op) {
    if (items.size() % 2 != 0) fail(std::string(op) + " has a key without a value");
    for (std::size_t k = 0; k < items.size(); k += 2) {
      check_key(items[k], op);
      out_.add_entry(dict, items[k], items[k + 1]);
    }
  }

  void memo_put(std::uint64_t index, const char* op) {
    const auto [it, added] = memo_.insert_or_assign(index, top(op));
    if (added) out_.charge(kMemoEntryBytes);
  }
  void memo_get(std::uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo index " + std::to_string(index) + " was never stored");
    push(it->second);
  }
  std::uint64_t decimal(std::string_view text, const char* op) {
    if (text.empty() || text.size() > 19) fail(std::string(op) + " needs a decimal memo index");
    std::uint64_t v = 0;
    for (const char c : text) {
      if (c < '0' || c > '9') fail(std::string(op) + " needs a decimal memo index");
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
  }

  void step(unsigned char code, const char* name) {
    switch (code) {
      case 0x80: {  // PROTO
        const auto version = static_cast<unsigned char>(take(1, name)[0]);
        if (version < 2 || version > 5)
          fail("pickle protocol " + std::to_string(version) + "; Tidepool reads protocols 2 to 5");
        return;
      }
      case 0x95: {  // FRAME: a length prefix for buffered reading; the opcodes inside are read as usual
        const std::uint64_t length = little_endian(8, name);
        if (length > in_.size() - pos_) fail("a FRAME of " + std::to_string(length) + " bytes runs past the end (a truncated file?)");
        return;
      }
      case '(': {
        const std::size_t before = marks_.capacity();
        marks_.push_back(stack_.size());
        out_.charge((marks_.capacity() - before) * sizeof(std::size_t));
        return;
      }
      case '0':
        if (stack_.size() > stack_floor()) stack_.pop_back();
        else pop_to_mark(name);
        return;
      case '1': pop_to_mark(name); return;
      case '2': push(top(name)); return;
      case 'N': push(Value{}); return;
      case 0x88:
      case 0x89: push(Value::of_bool(code == 0x88)); return;
      case 'J': {  // 4-byte signed
        const auto u = static_cast<std::uint32_t>(little_endian(4, name));
        std::int32_t i;
        std::memcpy(&i, &u, sizeof i);
        push(make_integer(i));
        return;
      }
      case 'K': push(make_integer(static_cast<std::int64_t>(little_endian(1, name)))); return;
      case 'M': push(make_integer(static_cast<std::int64_t>(little_endian(2, name)))); return;
      case 0x8a: push(make_long(take(little_endian(1, name), name))); return;
      case 0x8b: push(make_long(take(little_endian(4, name), name))); return;
      case 'G': {  // 8-byte big-endian IEEE 754
        const std::string_view s = take(8, name);
        std::uint64_t u = 0;
        for (const char c : s) u = u << 8 | static_cast<unsigned char>(c);
        double d;
        std::memcpy(&d, &u, sizeof u);
        push(Value::of_float(d));
        return;
      }
      case 0x8c: push(make_string(take(little_endian(1, name), name), Kind::string)); return;
      case 'X': push(make_string(take(little_endian(4, name), name), Kind::string)); return;
      case 0x8d: push(make_string(take(little_endian(8, name), name), Kind::string)); return;
      case 'C': push(make_string(take(little_endian(1, name), name), Kind::bytes)); return;
      case 'B': push(make_string(take(little_endian(4, name), name), Kind::bytes)); return;
      case 0x8e:
      case 0x96: push(make_string(take(little_endian(8, name), name), Kind::bytes)); return;
      case ']': push(make_container(Kind::list)); return;
      case '}': push(make_container(Kind::dict)); return;
      case ')': push(make_container(Kind::tuple)); return;
      case 0x8f: push(make_container(Kind::set)); return;
      case 'l': push(make_container(Kind::list, pop_to_mark(name))); return;
      case 't': push(make_container(Kind::tuple, pop_to_mark(name))); return;
      case 0x91: push(make_container(Kind::set, pop_to_mark(name))); return;
      case 0x85:
      case 0x86:
      case 0x87: {
        const std::size_t n = code - 0x84u;
        std::vector<Value> items(n);
        for (std::size_t k = n; k-- > 0;) items[k] = pop(name);
        push(make_container(Kind::tuple, std::move(items)));
        return;
      }
      case 'd': {
        std::vector<Value> items = pop_to_mark(name);
        const Value dict = make_container(Kind::dict);
        set_items(dict, items, name);
        push(dict);
        return;
      }
      case 'a': {
        const Value item = pop(name);
        out_.append(container_of(top(name), Kind::list, name, "list"), item);
        return;
      }
      case 'e':
      case 0x90: {
        std::vector<Value> items = pop_to_mark(name);
        const bool list = code == 'e';
        out_.append(container_of(top(name), list ? Kind::list : Kind::set, name, list ? "list" : "set"), items);
        return;
      }
      case 's': {
        const Value value = pop(name);
        const Value key = pop(name);
        set_items(container_of(top(name), Kind::dict, name, "dict"), {key, value}, name);
        return;
      }
      case 'u': {
        std::vector<Value> items = pop_to_mark(name);
        set_items(container_of(top(name), Kind::dict, name, "dict"), items, name);
        return;
      }
      case 'p': memo_put(decimal(line(name), name), name); return;
      case 'q': memo_put(little_endian(1, name), name); return;
      case 'r': memo_put(little_endian(4, name), name); return;
      case 0x94: memo_put(memo_.size(), name); return;
      case 'g': memo_get(decimal(line(name), name)); return;
      case 'h': memo_get(little_endian(1, name)); return;
      case 'j': memo_get(little_endian(4, name)); return;
      default: fail(std::string("opcode ") + name + " is not handled");  // every Treatment::read opcode is above
    }
  }

  PlainData finish() {
    out_.set_root(pop("STOP"));
    if (const std::string problem = nesting_problem(out_, limits_.max_depth); !problem.empty())
      throw std::invalid_argument(source_ + ": in the value STOP returns at byte " + std::to_string(at_) + ": " + problem);
    return std::move(out_);
  }

  std::string_view in_;
  const std::string& source_;
  const PlainDataLimits& limits_;
  std::size_t pos_ = 0, at_ = 0;  // at_: the opcode being read, for messages
  PlainData out_;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;  // stack sizes at each open MARK
  std::unordered_map<std::uint64_t, Value> memo_;
};

}  // namespace

PlainData read_pickle(std::string_view bytes, const std::string& source, const PlainDataLimits& limits) {
  return Unpickler(bytes, source, limits).read();
}

nlohmann::json read_pickle_json(std::string_view bytes, const std::string& source, const PlainDataLimits& limits) {
  return plain_data_json(read_pickle(bytes, source, limits), source, limits);
}

}  // namespace tidepool
