// Which kind of allocation trace a file holds, told by its first bytes, and
// a PyTorch snapshot read from a file's bytes in either of its forms:
//
//   pickle  `torch.cuda.memory._dump_snapshot("snap.pickle")`: starts with
//           the PROTO opcode (0x80), read by engine/memory/snapshot/
//           pickle_reader.h, which executes nothing; also a pickle of
//           protocol 0 or 1 (one of `(` `}` `]` `)` `c` first and `.`
//           last), which that reader refuses with its reason
//   json    `json.dump(torch.cuda.memory._snapshot(), f)`: starts with `{`
//           after any whitespace
//   csv     anything else: Tidepool's own trace (engine/memory/alloc_trace.h)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/file_bytes.h"  // read_file_bytes, for the file a snapshot comes from
#include "engine/memory/snapshot/snapshot_trace.h"

namespace tidepool {

enum class TraceFileFormat : std::uint8_t { csv, pickle, json };
const char* format_name(TraceFileFormat format);
TraceFileFormat trace_file_format(std::string_view bytes);

// The snapshot in `bytes` (pickle or JSON), one device of it as a trace
// (engine/memory/snapshot/snapshot_trace.h). std::invalid_argument naming
// `source` for anything it cannot read. `bytes` is taken, and released
// once read, so that the file, its value graph and the snapshot read from
// it are not held all at once: pass std::move(bytes).
SnapshotTrace read_snapshot_trace(std::string bytes, const std::string& source,
                                  std::optional<int> device = std::nullopt);

}  // namespace tidepool
