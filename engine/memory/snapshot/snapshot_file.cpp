#include "engine/memory/snapshot/snapshot_file.h"

#include <stdexcept>
#include <utility>

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
  // Protocols 0 and 1 write no PROTO: a pickle of a container (or a GLOBAL)
  // opens with MARK, EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE (or `c`) and ends
  // with STOP, where a CSV trace opens with its header and ends with a
  // number or a line end. The pickle reader names what it refuses there.
  if (bytes.size() >= 2 && std::string_view("(}])c").find(bytes[0]) != std::string_view::npos && bytes.back() == '.')
    return TraceFileFormat::pickle;
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '{') return TraceFileFormat::json;
  return TraceFileFormat::csv;
}

SnapshotTrace read_snapshot_trace(std::string bytes, const std::string& source, std::optional<int> device) {
  // One form at a time: the file's bytes until the graph is read, the graph
  // until the snapshot is read from it.
  PyTorchSnapshot snapshot = [&] {
    PlainData data = trace_file_format(bytes) == TraceFileFormat::pickle ? read_pickle(bytes, source)
                                                                          : read_json_data(bytes, source);
    std::string().swap(bytes);
    return read_pytorch_snapshot(data, source);
  }();
  return snapshot_trace(std::move(snapshot), source, device);
}

}  // namespace tidepool
