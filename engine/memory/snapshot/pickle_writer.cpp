#include "engine/memory/snapshot/pickle_writer.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <unordered_map>

namespace tidepool {

namespace {

using Value = PlainData::Value;
using Kind = PlainData::Kind;

// Opcodes (CPython's Lib/pickle.py), the ones plain data needs.
enum Op : unsigned char {
  MARK = '(',
  STOP = '.',
  BININT = 'J',
  BININT1 = 'K',
  BININT2 = 'M',
  NONE = 'N',
  BINUNICODE = 'X',
  APPEND = 'a',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  BINGET = 'h',
  LONG_BINGET = 'j',
  EMPTY_LIST = ']',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  PROTO = 0x80,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  MEMOIZE = 0x94,
};

// Python's pickler writes APPENDS, SETITEMS and ADDITEMS in batches of
// this many, so an unpickler's stack holds at most one batch.
constexpr std::size_t kBatch = 1000;

class Writer {
 public:
  explicit Writer(const PlainData& data) : data_(data) {}

  std::string write() {
    op(PROTO);
    out_.push_back(4);
    value(data_.root());
    op(STOP);
    return std::move(out_);
  }

 private:
  void op(unsigned char code) { out_.push_back(static_cast<char>(code)); }
  void little_endian(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }

  // The memo key of a string or container: its table and index in PlainData.
  static std::uint64_t key(const Value& v) { return (std::uint64_t{v.is_container()} << 32) | v.ref; }
  // Writes a reference when `v` is in the memo already.
  bool written_before(const Value& v) {
    const auto it = memo_.find(key(v));
    if (it == memo_.end()) return false;
    if (it->second < 256) {
      op(BINGET);
      out_.push_back(static_cast<char>(it->second));
    } else {
      op(LONG_BINGET);
      little_endian(it->second, 4);
    }
    return true;
  }
  // Puts the value just written (on top of the unpickler's stack) in the memo.
  void memoize(const Value& v) {
    op(MEMOIZE);
    memo_.emplace(key(v), static_cast<std::uint32_t>(memo_.size()));
  }

  void integer(std::int64_t v) {
    if (v >= 0 && v <= 0xff) {
      op(BININT1);
      out_.push_back(static_cast<char>(v));
    } else if (v >= 0 && v <= 0xffff) {
      op(BININT2);
      little_endian(static_cast<std::uint64_t>(v), 2);
    } else if (v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max()) {
      op(BININT);
      little_endian(static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
    } else {
      long1(static_cast<std::uint64_t>(v), v < 0);
    }
  }
  // LONG1: little-endian two's complement in as few bytes as keep the sign
  // (as Python's encode_long writes it); `negative` says whether the 64
  // bits are a negative int64 or an unsigned value past int64.
  void long1(std::uint64_t bits, bool negative) {
    std::string bytes;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    if (!negative && (bits >> 63)) bytes.push_back(0);  // an unsigned value past 2^63 needs a ninth byte for its sign
    const auto high = [](char c) { return (static_cast<unsigned char>(c) & 0x80) != 0; };
    while (bytes.size() > 1) {
      const char last = bytes.back(), before = bytes[bytes.size() - 2];
      if ((last == 0 && !high(before)) || (static_cast<unsigned char>(last) == 0xff && high(before)))
        bytes.pop_back();
      else
        break;
    }
    op(LONG1);
    out_.push_back(static_cast<char>(bytes.size()));
    out_ += bytes;
  }
  void floating(double v) {
    op(BINFLOAT);
    const auto bits = std::bit_cast<std::uint64_t>(v);
    for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
  }
  void text(const Value& v) {
    if (written_before(v)) return;
    const std::string& s = data_.text(v);
    const bool is_bytes = v.kind == Kind::bytes;
    if (s.size() < 256) {
      op(is_bytes ? SHORT_BINBYTES : SHORT_BINUNICODE);
      out_.push_back(static_cast<char>(s.size()));
    } else if (s.size() <= std::numeric_limits<std::uint32_t>::max()) {
      op(is_bytes ? BINBYTES : BINUNICODE);
      little_endian(s.size(), 4);
    } else {
      op(is_bytes ? BINBYTES8 : BINUNICODE8);
      little_endian(s.size(), 8);
    }
    out_ += s;
    memoize(v);
  }

  // Items in batches: MARK, the batch, then `many` (APPENDS, ADDITEMS); a
  // batch of one as `one` where the opcode has such a form (APPEND).
  void batched(std::span<const Value> items, unsigned char many, int one) {
    for (std::size_t at = 0; at < items.size(); at += kBatch) {
      const std::size_t n = std::min(kBatch, items.size() - at);
      if (n == 1 && one >= 0) {
        value(items[at]);
        op(static_cast<unsigned char>(one));
        continue;
      }
      op(MARK);
      for (std::size_t i = at; i < at + n; ++i) value(items[i]);
      op(many);
    }
  }

  void container(const Value& v) {
    if (written_before(v)) return;
    switch (v.kind) {
      case Kind::list:
        op(EMPTY_LIST);
        memoize(v);  // before its items, as Python does, so an item may refer back to it
        batched(data_.items(v), APPENDS, APPEND);
        return;
      case Kind::set:
        op(EMPTY_SET);
        memoize(v);
        batched(data_.items(v), ADDITEMS, -1);
        return;
      case Kind::dict: {
        op(EMPTY_DICT);
        memoize(v);
        const std::span<const PlainData::Entry> entries = data_.entries(v);
        for (std::size_t at = 0; at < entries.size(); at += kBatch) {
          const std::size_t n = std::min(kBatch, entries.size() - at);
          if (n > 1) op(MARK);
          for (std::size_t i = at; i < at + n; ++i) {
            if (entries[i].first.is_container())
              throw std::invalid_argument(std::string("a dict key that is a ") + kind_name(entries[i].first.kind) +
                                          ": pickle can only key a dict by a hashable value");
            value(entries[i].first);
            value(entries[i].second);
          }
          op(n > 1 ? SETITEMS : SETITEM);
        }
        return;
      }
      case Kind::tuple: {
        // A tuple is built from its items, then memoized (Python's save_tuple).
        const std::span<const Value> items = data_.items(v);
        if (items.empty()) {
          op(EMPTY_TUPLE);
        } else if (items.size() <= 3) {
          for (const Value& item : items) value(item);
          op(items.size() == 1 ? TUPLE1 : items.size() == 2 ? TUPLE2 : TUPLE3);
        } else {
          op(MARK);
          for (const Value& item : items) value(item);
          op(TUPLE);
        }
        memoize(v);
        return;
      }
      default:
        return;
    }
  }

  void value(const Value& v) {
    switch (v.kind) {
      case Kind::none: op(NONE); return;
      case Kind::boolean: op(v.flag ? NEWTRUE : NEWFALSE); return;
      case Kind::integer: integer(v.integer); return;
      case Kind::unsigned_integer:
        if (v.unsigned_integer <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          integer(static_cast<std::int64_t>(v.unsigned_integer));
        else
          long1(v.unsigned_integer, false);
        return;
      case Kind::floating: floating(v.floating); return;
      case Kind::string:
      case Kind::bytes: text(v); return;
      default: container(v); return;
    }
  }

  const PlainData& data_;
  std::string out_;
  std::unordered_map<std::uint64_t, std::uint32_t> memo_;
};

}  // namespace

std::string write_pickle(const PlainData& data, int max_depth) {
  // Checked first, so that the writer's recursion is bounded and every
  // container it meets again is one it has finished (or, for a list, set
  // or dict, begun: which is only a cycle, refused here).
  if (const std::string problem = nesting_problem(data, max_depth); !problem.empty())
    throw std::invalid_argument("cannot write this data as a pickle: " + problem);
  return Writer(data).write();
}

}  // namespace tidepool
