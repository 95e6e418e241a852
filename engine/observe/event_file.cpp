#include "engine/observe/event_file.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "engine/core/fnv1a.h"

namespace fs = std::filesystem;

namespace tidepool {


namespace {

using event_file::RecordType;

// Little-endian reads; the caller has checked that the bytes are there.
struct Cursor {
  const unsigned char* data;
  std::size_t size;
  std::size_t pos;

  std::size_t left() const { return size - pos; }
  std::uint64_t little_endian(int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(data[pos + i]) << (8 * i);
    pos += static_cast<std::size_t>(n);
    return v;
  }
  std::uint8_t u8() { return data[pos++]; }
  std::uint32_t u32() { return static_cast<std::uint32_t>(little_endian(4)); }
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::uint64_t u64() { return little_endian(8); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  std::size_t size_value() { return static_cast<std::size_t>(u64()); }
  double f64() { return std::bit_cast<double>(u64()); }
  float f32() { return std::bit_cast<float>(u32()); }
};

// The reasons a file is refused, each naming it.
[[noreturn]] void truncated(const fs::path& path, const std::string& detail) {
  throw std::runtime_error(path.string() + " is truncated: " + detail +
                           " (the run that wrote it was stopped before it finished, or the file was cut short)");
}
[[noreturn]] void corrupt(const fs::path& path, const std::string& detail) {
  throw std::runtime_error(path.string() + " is corrupt: " + detail);
}

std::string at_byte(std::size_t offset) { return " at byte " + std::to_string(offset); }

// A field holding an enum's value, checked against its last value.
template <typename E>
E checked_enum(std::uint8_t raw, E last, const fs::path& path, const char* what, std::size_t record) {
  if (raw > static_cast<std::uint8_t>(last))
    corrupt(path, std::string(what) + " " + std::to_string(raw) + " in the record" + at_byte(record));
  return static_cast<E>(raw);
}

const std::string& checked_string(std::uint32_t id, const std::vector<std::string>& strings, const fs::path& path,
                                  std::size_t record) {
  if (id >= strings.size())
    corrupt(path, "the record" + at_byte(record) + " names string " + std::to_string(id) + " of " +
                      std::to_string(strings.size()) + " defined before it");
  return strings[id];
}

std::string counts_text(const EventFileCounts& n) {
  return std::to_string(n.strings) + " strings, " + std::to_string(n.spans) + " spans, " + std::to_string(n.allocs) +
         " allocations, " + std::to_string(n.loads) + " load samples, " + std::to_string(n.iterations) + " iterations";
}

// Walks the records after the header, building the string table as it
// goes. Without a sink it checks them (the end record too); with one, it
// walks a checked file again and sends the events on.
EventFileCounts walk(const fs::path& path, const std::vector<unsigned char>& bytes, EventSink* sink) {
  Cursor c{bytes.data(), bytes.size(), event_file::kHeaderBytes};
  EventFileCounts n;
  std::vector<std::string> strings;
  for (;;) {
    const std::size_t record = c.pos;
    if (c.left() == 0)
      truncated(path, "it ends after " + std::to_string(n.events()) +
                          " events without the end record a finished run writes");
    const std::uint8_t type = c.u8();
    auto need = [&](std::size_t body) {
      if (c.left() < body)
        truncated(path, "its last record" + at_byte(record) + " is cut short after " +
                            std::to_string(n.events()) + " events");
    };
    switch (static_cast<RecordType>(type)) {
      case RecordType::string: {
        need(4);
        const std::uint32_t length = c.u32();
        need(length);
        strings.emplace_back(reinterpret_cast<const char*>(c.data + c.pos), length);
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
        if (stream >= kStreamCount)
          corrupt(path, "stream " + std::to_string(stream) + " in the record" + at_byte(record));
        e.stream = static_cast<Stream>(stream);
        e.kind = checked_enum(c.u8(), SpanKind::unpack, path, "span kind", record);
        e.layer = checked_string(c.u32(), strings, path, record);
        e.tensor = checked_string(c.u32(), strings, path, record);
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
        e.action = checked_enum(c.u8(), PoolAction::give_back, path, "pool action", record);
        e.role = checked_enum(c.u8(), Role::workspace, path, "tensor role", record);
        e.tensor = c.i32();
        e.name = checked_string(c.u32(), strings, path, record);
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
      case RecordType::end: {
        need(event_file::kEndBytes);
        if (sink) return n;
        EventFileCounts said;
        said.strings = c.u64();
        said.spans = c.u64();
        said.allocs = c.u64();
        said.loads = c.u64();
        said.iterations = c.u64();
        const std::uint64_t sum = c.u64();
        if (sum != fnv1a(bytes.data(), record))
          corrupt(path, "its checksum does not match its " + std::to_string(record) + " bytes of records");
        if (said != n)
          corrupt(path, "its end record counts " + counts_text(said) + " but it holds " + counts_text(n));
        if (c.left() > 0)
          corrupt(path, std::to_string(c.left()) + " bytes follow the end record" + at_byte(record));
        return n;
      }
      default:
        corrupt(path, "unknown record type " + std::to_string(type) + at_byte(record));
    }
  }
}

std::vector<unsigned char> read_all(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw std::runtime_error("cannot read events file " + path.string() + ": " +
                             (fs::exists(path, ec) ? "not a file" : "no such file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read events file " + path.string() + ": " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(std::max<std::streamoff>(size, 0)));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!in) throw std::runtime_error("cannot read events file " + path.string() + ": reading failed");
  return bytes;
}

}  // namespace

EventFile::EventFile(fs::path path) : path_(std::move(path)), bytes_(read_all(path_)) {
  if (bytes_.empty()) truncated(path_, "it is empty");
  const std::size_t prefix = std::min(bytes_.size(), sizeof event_file::kMagic);
  if (std::memcmp(bytes_.data(), event_file::kMagic, prefix) != 0)
    throw std::runtime_error(path_.string() + " is not a Tidepool events file (it does not begin with \"" +
                             std::string(event_file::kMagic, sizeof event_file::kMagic) + "\")");
  if (bytes_.size() < event_file::kHeaderBytes) truncated(path_, "it ends inside its header");
  Cursor header{bytes_.data(), bytes_.size(), sizeof event_file::kMagic};
  const std::uint32_t version = header.u32();
  if (version > event_file::kVersion)
    throw std::runtime_error(path_.string() + " is events format version " + std::to_string(version) +
                             ", newer than this tidepool reads (version " + std::to_string(event_file::kVersion) +
                             "): open it with the tidepool that wrote it, or a newer one");
  if (version == 0 || header.u32() != 0) corrupt(path_, "its header is damaged");
  counts_ = walk(path_, bytes_, nullptr);
}

void EventFile::replay(EventSink& sink) const { walk(path_, bytes_, &sink); }

EventFileCounts replay_event_file(const fs::path& path, EventSink& sink) {
  const EventFile file(path);
  file.replay(sink);
  return file.counts();
}

}  // namespace tidepool
