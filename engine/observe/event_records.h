// The records of the events format (engine/observe/event_file.h has the
// layout), written and read in this one place: an events file is a header,
// these records and an end record; the events a rank forwards to the
// window (engine/observe/rank_events.h) are these records in messages.
//
// Names travel once: the encoder writes a string record the first time it
// meets a layer or tensor name and its id after that, so a decoder must see
// every record an encoder wrote, in order, to resolve the ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/observe/event_file.h"
#include "engine/observe/events.h"

namespace tidepool {

class EventEncoder {
 public:
  // Appends the event's record to `out`, after a string record for each
  // name this encoder has not written before.
  void encode(const SpanEvent& e, std::vector<unsigned char>& out);
  void encode(const AllocEvent& e, std::vector<unsigned char>& out);
  void encode(const LoadSample& e, std::vector<unsigned char>& out);
  void encode(const IterationSummary& e, std::vector<unsigned char>& out);
  // The end record: the counts so far and `checksum` (of every byte before it).
  void encode_end(std::uint64_t checksum, std::vector<unsigned char>& out) const;

  // Records written so far, by type.
  const EventFileCounts& counts() const { return counts_; }

 private:
  std::uint32_t string_id(const std::string& s, std::vector<unsigned char>& out);

  std::unordered_map<std::string, std::uint32_t> ids_;
  EventFileCounts counts_;
};

// Bytes no encoder wrote. `truncated`: they end inside a record (cut
// short); otherwise they hold a value no encoder writes (corrupt). what()
// says which record and where, by its offset.
class EventDecodeError : public std::runtime_error {
 public:
  EventDecodeError(bool truncated, const std::string& what) : std::runtime_error(what), truncated_(truncated) {}
  bool truncated() const { return truncated_; }

 private:
  bool truncated_;
};

class EventDecoder {
 public:
  // Decodes the records in bytes[pos, size), sending each event to `sink`
  // (none: only checks them), until an end record, whose offset it returns
  // without reading it, or the end of the bytes (returns `size`). The
  // strings defined stay for the next call. Throws EventDecodeError.
  std::size_t decode(const unsigned char* bytes, std::size_t size, std::size_t pos, EventSink* sink);

  // Records decoded so far, by type.
  const EventFileCounts& counts() const { return counts_; }

 private:
  std::vector<std::string> strings_;
  EventFileCounts counts_;
};

// Little-endian reads over bytes whose length the caller has checked.
struct ByteCursor {
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
  double f64();
  float f32();
};

}  // namespace tidepool
