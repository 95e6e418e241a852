// events.bin: the events of a run's traced iterations, kept so that
// `tidepool view` can show a finished --batch run in the window as it looked
// live, the way a profiler opens a saved capture. EventFileWriter
// (sinks/event_file_writer.h) writes it; EventFile reads it back and
// replays it into any EventSink (a RingSink, for the window).
//
// The format, version 1. Everything is little-endian; doubles and floats are
// stored as their IEEE-754 bits, sizes and offsets as u64.
//
//   header    "TPEVENTS" (8 bytes), u32 version, u32 0 (reserved)
//   records   in the order the events arrived, each a u8 type and a body:
//     1 string     u32 length, then that many bytes: defines the next string
//                  id (0, 1, 2, ...) ahead of the first record that uses it.
//                  Layer and tensor names repeat in every iteration, so the
//                  events carry ids into this table instead of the text.
//     2 span       i64 iteration, i32 step, u8 stream, u8 kind, u32 layer id,
//                  u32 tensor id, u64 bytes, f64 start_us, f64 end_us    (46 bytes)
//     3 alloc      i64 iteration, i32 step, u8 action, u8 role, i32 tensor,
//                  u32 name id, u64 offset, u64 bytes, f64 time_us         (46 bytes)
//     4 load       i64 iteration, i32 step, f64 time_us, u64 load_bytes,
//                  u64 extent_bytes, u64 largest_free_bytes               (44 bytes)
//     5 iteration  i64 iteration, f64 start_us, f64 end_us, u64 peak_load_bytes,
//                  u64 footprint_bytes, i32 peak_step, u64 largest free block's
//                  offset, u64 its bytes, f32 loss, f32 accuracy           (68 bytes)
//   end       u8 255, then u64 counts of strings, spans, allocs, loads and
//             iterations, and u64 checksum: 64-bit FNV-1a of every byte
//             before the end record. Written when the run finishes (the
//             writer's flush()); nothing follows it.
//
// A file without its end record is one whose run was stopped before it
// finished (killed, or the disk filled): the reader refuses it rather than
// show part of an iteration as if it were the whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/observe/events.h"

namespace tidepool {

namespace event_file {

inline constexpr char kMagic[8] = {'T', 'P', 'E', 'V', 'E', 'N', 'T', 'S'};
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 16;

enum class RecordType : std::uint8_t { string = 1, span = 2, alloc = 3, load = 4, iteration = 5, end = 255 };

// The bodies' sizes, after the type byte (a string's is 4 + its length).
inline constexpr std::size_t kSpanBytes = 46;
inline constexpr std::size_t kAllocBytes = 46;
inline constexpr std::size_t kLoadBytes = 44;
inline constexpr std::size_t kIterationBytes = 68;
inline constexpr std::size_t kEndBytes = 48;

// The checksum is engine/core/fnv1a.h's.

}  // namespace event_file

struct EventFileCounts {
  std::uint64_t strings = 0, spans = 0, allocs = 0, loads = 0, iterations = 0;
  std::uint64_t events() const { return spans + allocs + loads + iterations; }
  bool operator==(const EventFileCounts&) const = default;
};

// A whole events file, read and checked.
class EventFile {
 public:
  // Reads the file and checks every record, the counts and the checksum.
  // Throws std::runtime_error naming the file when it cannot be read, is
  // not an events file, has a newer version than this build reads, is
  // truncated (no end record: its run did not finish) or is corrupt.
  explicit EventFile(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }
  const EventFileCounts& counts() const { return counts_; }
  // Every event, in the order it was written, into `sink` (flush() is not
  // called: the sink may be filled from several files).
  void replay(EventSink& sink) const;

 private:
  std::filesystem::path path_;
  std::vector<unsigned char> bytes_;  // the whole file, checked
  EventFileCounts counts_;
};

// Reads `path` and replays it into `sink`: EventFile(path).replay(sink).
EventFileCounts replay_event_file(const std::filesystem::path& path, EventSink& sink);

}  // namespace tidepool
