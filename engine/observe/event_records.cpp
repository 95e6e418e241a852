#include "engine/observe/event_records.h"

#include <array>
#include <bit>
#include <cassert>

namespace tidepool {
namespace {

using event_file::RecordType;

// One record, its type byte and a fixed-size body, filled little-endian.
template <std::size_t Body>
class Record {
 public:
  explicit Record(RecordType type) { bytes_[0] = static_cast<unsigned char>(type); }
  Record& u8(std::uint8_t v) { return little_endian(v, 1); }
  Record& u32(std::uint32_t v) { return little_endian(v, 4); }
  Record& i32(std::int32_t v) { return u32(static_cast<std::uint32_t>(v)); }
  Record& u64(std::uint64_t v) { return little_endian(v, 8); }
  Record& i64(std::int64_t v) { return u64(static_cast<std::uint64_t>(v)); }
  Record& f64(double v) { return u64(std::bit_cast<std::uint64_t>(v)); }
  Record& f32(float v) { return u32(std::bit_cast<std::uint32_t>(v)); }
  // Appends the whole record, once every field of its body is filled.
  void append_to(std::vector<unsigned char>& out) const {
    assert(at_ == bytes_.size() && "a record's fields must fill its body");
    out.insert(out.end(), bytes_.begin(), bytes_.end());
  }

 private:
  Record& little_endian(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_[at_++] = static_cast<unsigned char>(v >> (8 * i));
    return *this;
  }
  std::array<unsigned char, 1 + Body> bytes_{};
  std::size_t at_ = 1;
};

std::string at_byte(std::size_t offset) { return " at byte " + std::to_string(offset); }

[[noreturn]] void corrupt(const std::string& what) { throw EventDecodeError(false, what); }

// A field holding an enum's value, checked against its last value.
template <typename E>
E checked_enum(std::uint8_t raw, E last, const char* what, std::size_t record) {
  if (raw > static_cast<std::uint8_t>(last))
    corrupt(std::string(what) + " " + std::to_string(raw) + " in the record" + at_byte(record));
  return static_cast<E>(raw);
}

const std::string& checked_string(std::uint32_t id, const std::vector<std::string>& strings, std::size_t record) {
  if (id >= strings.size())
    corrupt("the record" + at_byte(record) + " names string " + std::to_string(id) + " of " +
            std::to_string(strings.size()) + " defined before it");
  return strings[id];
}

}  // namespace

double ByteCursor::f64() { return std::bit_cast<double>(u64()); }
float ByteCursor::f32() { return std::bit_cast<float>(u32()); }

std::uint32_t EventEncoder::string_id(const std::string& s, std::vector<unsigned char>& out) {
  const auto [it, added] = ids_.try_emplace(s, static_cast<std::uint32_t>(ids_.size()));
  if (added) {
    Record<4> r(RecordType::string);
    r.u32(static_cast<std::uint32_t>(s.size()));
    r.append_to(out);
    out.insert(out.end(), s.begin(), s.end());
    ++counts_.strings;
  }
  return it->second;
}

void EventEncoder::encode(const SpanEvent& e, std::vector<unsigned char>& out) {
  const std::uint32_t layer = string_id(e.layer, out), tensor = string_id(e.tensor, out);
  Record<event_file::kSpanBytes> r(RecordType::span);
  r.i64(e.iteration)
      .i32(e.step)
      .u8(static_cast<std::uint8_t>(e.stream))
      .u8(static_cast<std::uint8_t>(e.kind))
      .u32(layer)
      .u32(tensor)
      .u64(e.bytes)
      .f64(e.start_us)
      .f64(e.end_us);
  r.append_to(out);
  ++counts_.spans;
}

void EventEncoder::encode(const AllocEvent& e, std::vector<unsigned char>& out) {
  const std::uint32_t name = string_id(e.name, out);
  Record<event_file::kAllocBytes> r(RecordType::alloc);
  r.i64(e.iteration)
      .i32(e.step)
      .u8(static_cast<std::uint8_t>(e.action))
      .u8(static_cast<std::uint8_t>(e.role))
      .i32(e.tensor)
      .u32(name)
      .u64(e.offset)
      .u64(e.bytes)
      .f64(e.time_us);
  r.append_to(out);
  ++counts_.allocs;
}

void EventEncoder::encode(const LoadSample& e, std::vector<unsigned char>& out) {
  Record<event_file::kLoadBytes> r(RecordType::load);
  r.i64(e.iteration).i32(e.step).f64(e.time_us).u64(e.load_bytes).u64(e.extent_bytes).u64(e.largest_free_bytes);
  r.append_to(out);
  ++counts_.loads;
}

void EventEncoder::encode(const IterationSummary& e, std::vector<unsigned char>& out) {
  Record<event_file::kIterationBytes> r(RecordType::iteration);
  r.i64(e.iteration)
      .f64(e.start_us)
      .f64(e.end_us)
      .u64(e.peak_load_bytes)
      .u64(e.footprint_bytes)
      .i32(e.peak_step)
      .u64(e.largest_free_at_peak.offset)
      .u64(e.largest_free_at_peak.bytes)
      .f32(e.loss)
      .f32(e.accuracy);
  r.append_to(out);
  ++counts_.iterations;
}

void EventEncoder::encode_end(std::uint64_t checksum, std::vector<unsigned char>& out) const {
  Record<event_file::kEndBytes> r(RecordType::end);
  r.u64(counts_.strings)
      .u64(counts_.spans)
      .u64(counts_.allocs)
      .u64(counts_.loads)
      .u64(counts_.iterations)
      .u64(checksum);
  r.append_to(out);
}

std::size_t EventDecoder::decode(const unsigned char* bytes, std::size_t size, std::size_t pos, EventSink* sink) {
  ByteCursor c{bytes, size, pos};
  EventFileCounts& n = counts_;
  while (c.left() > 0) {
    const std::size_t record = c.pos;
    const std::uint8_t type = c.u8();
    auto need = [&](std::size_t body) {
      if (c.left() < body)
        throw EventDecodeError(true, "its last record" + at_byte(record) + " is cut short after " +
                                         std::to_string(n.events()) + " events");
    };
    switch (static_cast<RecordType>(type)) {
      case RecordType::string: {
        need(4);
        const std::uint32_t length = c.u32();
        need(length);
        strings_.emplace_back(reinterpret_cast<const char*>(c.data + c.pos), length);
        c.pos += length;
        ++n.strings;
        break;
      }
      case RecordType::span: {
        need(event_file::kSpanBytes);
        SpanEvent e;
        e.iteration = c.i64();
        e.step = c.i32();
        const std::uint8_t stream = c.u8();
        if (stream >= kStreamCount) corrupt("stream " + std::to_string(stream) + " in the record" + at_byte(record));
        e.stream = static_cast<Stream>(stream);
        e.kind = checked_enum(c.u8(), SpanKind::recompute, "span kind", record);
        e.layer = checked_string(c.u32(), strings_, record);
        e.tensor = checked_string(c.u32(), strings_, record);
        e.bytes = c.size_value();
        e.start_us = c.f64();
        e.end_us = c.f64();
        ++n.spans;
        if (sink) sink->on_span(e);
        break;
      }
      case RecordType::alloc: {
        need(event_file::kAllocBytes);
        AllocEvent e;
        e.iteration = c.i64();
        e.step = c.i32();
        e.action = checked_enum(c.u8(), PoolAction::give_back, "pool action", record);
        e.role = checked_enum(c.u8(), Role::workspace, "tensor role", record);
        e.tensor = c.i32();
        e.name = checked_string(c.u32(), strings_, record);
        e.offset = c.size_value();
        e.bytes = c.size_value();
        e.time_us = c.f64();
        ++n.allocs;
        if (sink) sink->on_alloc(e);
        break;
      }
      case RecordType::load: {
        need(event_file::kLoadBytes);
        LoadSample e;
        e.iteration = c.i64();
        e.step = c.i32();
        e.time_us = c.f64();
        e.load_bytes = c.size_value();
        e.extent_bytes = c.size_value();
        e.largest_free_bytes = c.size_value();
        ++n.loads;
        if (sink) sink->on_load(e);
        break;
      }
      case RecordType::iteration: {
        need(event_file::kIterationBytes);
        IterationSummary e;
        e.iteration = c.i64();
        e.start_us = c.f64();
        e.end_us = c.f64();
        e.peak_load_bytes = c.size_value();
        e.footprint_bytes = c.size_value();
        e.peak_step = c.i32();
        e.largest_free_at_peak.offset = c.size_value();
        e.largest_free_at_peak.bytes = c.size_value();
        e.loss = c.f32();
        e.accuracy = c.f32();
        ++n.iterations;
        if (sink) sink->on_iteration(e);
        break;
      }
      case RecordType::end:
        return record;
      default:
        corrupt("unknown record type " + std::to_string(type) + at_byte(record));
    }
  }
  return c.pos;
}

}  // namespace tidepool
