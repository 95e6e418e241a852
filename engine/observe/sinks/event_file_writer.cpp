#include "engine/observe/sinks/event_file_writer.h"

#include <array>
#include <cassert>
#include <bit>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

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
  // The whole record, once every field of its body is filled.
  const unsigned char* data() const {
    assert(at_ == bytes_.size() && "a record's fields must fill its body");
    return bytes_.data();
  }
  std::size_t size() const { return bytes_.size(); }

 private:
  Record& little_endian(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_[at_++] = static_cast<unsigned char>(v >> (8 * i));
    return *this;
  }
  std::array<unsigned char, 1 + Body> bytes_{};
  std::size_t at_ = 1;
};

}  // namespace

EventFileWriter::EventFileWriter(std::string path) : path_(std::move(path)) {
  out_.open(path_, std::ios::out | std::ios::binary | std::ios::trunc);
  if (!out_) {
    throw std::runtime_error("cannot open events file '" + path_ + "' for writing: " + std::strerror(errno));
  }
  std::array<unsigned char, event_file::kHeaderBytes> header{};
  std::memcpy(header.data(), event_file::kMagic, sizeof event_file::kMagic);
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<unsigned char>(event_file::kVersion >> (8 * i));
  write(header.data(), header.size());
}

EventFileWriter::~EventFileWriter() {
  try {
    std::lock_guard lock(mutex_);
    closed_ = true;
    out_.close();  // no end record: the run did not finish (see the header)
  } catch (...) {
    // A destructor must not throw; flush() reports write errors.
  }
}

void EventFileWriter::write(const unsigned char* bytes, std::size_t n) {
  out_.write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(n));
  checksum_ = fnv1a(bytes, n, checksum_);
}

std::uint32_t EventFileWriter::string_id(const std::string& s) {
  const auto [it, added] = ids_.try_emplace(s, static_cast<std::uint32_t>(ids_.size()));
  if (added) {
    Record<4> r(RecordType::string);
    r.u32(static_cast<std::uint32_t>(s.size()));
    write(r.data(), r.size());
    write(reinterpret_cast<const unsigned char*>(s.data()), s.size());
    ++counts_.strings;
  }
  return it->second;
}

void EventFileWriter::on_span(const SpanEvent& e) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  const std::uint32_t layer = string_id(e.layer), tensor = string_id(e.tensor);
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
  write(r.data(), r.size());
  ++counts_.spans;
}

void EventFileWriter::on_alloc(const AllocEvent& e) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  const std::uint32_t name = string_id(e.name);
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
  write(r.data(), r.size());
  ++counts_.allocs;
}

void EventFileWriter::on_load(const LoadSample& e) {
  Record<event_file::kLoadBytes> r(RecordType::load);
  r.i64(e.iteration).i32(e.step).f64(e.time_us).u64(e.load_bytes).u64(e.extent_bytes).u64(e.largest_free_bytes);
  std::lock_guard lock(mutex_);
  if (closed_) return;
  write(r.data(), r.size());
  ++counts_.loads;
}

void EventFileWriter::on_iteration(const IterationSummary& e) {
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
  std::lock_guard lock(mutex_);
  if (closed_) return;
  write(r.data(), r.size());
  ++counts_.iterations;
}

void EventFileWriter::flush() {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  closed_ = true;
  Record<event_file::kEndBytes> r(RecordType::end);
  r.u64(counts_.strings)
      .u64(counts_.spans)
      .u64(counts_.allocs)
      .u64(counts_.loads)
      .u64(counts_.iterations)
      .u64(checksum_);
  out_.write(reinterpret_cast<const char*>(r.data()), static_cast<std::streamsize>(r.size()));
  out_.close();
  if (out_.fail())
    throw std::runtime_error("could not write events file '" + path_ + "' (disk full or file removed?)");
}

}  // namespace tidepool
