#include "engine/memory/snapshot/snapshot_file.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/memory/snapshot/pickle_reader.h"
#include "engine/memory/snapshot/pytorch_snapshot.h"

namespace tidepool {

const char* format_name(TraceFileFormat format) {
  switch (format) {
    case TraceFileFormat::csv: return "csv";
    case TraceFileFormat::pickle: return "pickle";
    case TraceFileFormat::json: return "json";
  }
  return "?";
}

TraceFileFormat trace_file_format(std::string_view bytes) {
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) return TraceFileFormat::pickle;
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '{') return TraceFileFormat::json;
  return TraceFileFormat::csv;
}

SnapshotTrace read_snapshot_trace(std::string_view bytes, const std::string& source, std::optional<int> device) {
  nlohmann::json snapshot;
  if (trace_file_format(bytes) == TraceFileFormat::pickle) {
    snapshot = read_pickle(bytes, source);
  } else {
    try {
      snapshot = nlohmann::json::parse(bytes);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(source + ": not a pickle (no PROTO byte 0x80 first) and not valid JSON: " + e.what());
    }
  }
  return snapshot_trace(read_pytorch_snapshot(snapshot, source), source, device);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::invalid_argument("error reading '" + path + "'");
  return bytes;
}

}  // namespace tidepool
