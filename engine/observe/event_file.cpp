#include "engine/observe/event_file.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "engine/core/fnv1a.h"
#include "engine/observe/event_records.h"

namespace fs = std::filesystem;

namespace tidepool {
namespace {

// The reasons a file is refused, each naming it.
[[noreturn]] void truncated(const fs::path& path, const std::string& detail) {
  throw std::runtime_error(path.string() + " is truncated: " + detail +
                           " (the run that wrote it was stopped before it finished, or the file was cut short)");
}
[[noreturn]] void corrupt(const fs::path& path, const std::string& detail) {
  throw std::runtime_error(path.string() + " is corrupt: " + detail);
}

std::string counts_text(const EventFileCounts& n) {
  return std::to_string(n.strings) + " strings, " + std::to_string(n.spans) + " spans, " + std::to_string(n.allocs) +
         " allocations, " + std::to_string(n.loads) + " load samples, " + std::to_string(n.iterations) + " iterations";
}

// Walks the records after the header (engine/observe/event_records.h).
// Without a sink it checks them and the end record; with one, it walks a
// checked file again and sends the events on.
EventFileCounts walk(const fs::path& path, const std::vector<unsigned char>& bytes, EventSink* sink) {
  EventDecoder decoder;
  std::size_t end = 0;
  try {
    end = decoder.decode(bytes.data(), bytes.size(), event_file::kHeaderBytes, sink);
  } catch (const EventDecodeError& e) {
    if (e.truncated()) truncated(path, e.what());
    corrupt(path, e.what());
  }
  const EventFileCounts& n = decoder.counts();
  if (end == bytes.size())
    truncated(path, "it ends after " + std::to_string(n.events()) +
                        " events without the end record a finished run writes");
  if (sink) return n;
  ByteCursor c{bytes.data(), bytes.size(), end + 1};
  if (c.left() < event_file::kEndBytes)
    truncated(path, "its last record at byte " + std::to_string(end) + " is cut short after " +
                        std::to_string(n.events()) + " events");
  EventFileCounts said;
  said.strings = c.u64();
  said.spans = c.u64();
  said.allocs = c.u64();
  said.loads = c.u64();
  said.iterations = c.u64();
  const std::uint64_t sum = c.u64();
  if (sum != fnv1a(bytes.data(), end))
    corrupt(path, "its checksum does not match its " + std::to_string(end) + " bytes of records");
  if (said != n) corrupt(path, "its end record counts " + counts_text(said) + " but it holds " + counts_text(n));
  if (c.left() > 0) corrupt(path, std::to_string(c.left()) + " bytes follow the end record at byte " + std::to_string(end));
  return n;
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
  ByteCursor header{bytes_.data(), bytes_.size(), sizeof event_file::kMagic};
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
