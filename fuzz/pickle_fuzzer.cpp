// The safe unpickler (engine/memory/snapshot/pickle_reader.h) and, on what
// it returns, its expansion into JSON, the PyTorch snapshot reader and its
// trace (engine/memory/snapshot/snapshot_trace.h). The unpickler must
// return a value graph or refuse with std::invalid_argument; the graph
// must expand or be refused the same way, and either be refused by the
// snapshot reader or give a trace that passes validate(), with its side
// data one entry per event. What it returns, the writer (engine/memory/
// snapshot/pickle_writer.h) writes as a pickle that reads back to a graph
// the writer writes byte for byte the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/memory/snapshot/pickle_reader.h"
#include "engine/memory/snapshot/pickle_writer.h"
#include "engine/memory/snapshot/pytorch_snapshot.h"
#include "engine/memory/snapshot/snapshot_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidepool;
  PlainDataLimits limits;
  limits.max_memory_bytes = std::size_t{64} << 20;  // keep each input's memory and expansion small
  limits.max_output_bytes = std::size_t{16} << 20;
  PlainData value;
  try {
    value = read_pickle(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input", limits);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  {
    // Written back, it reads again (the writer memoizes every string and
    // container, so its memo may be bigger than the input's: more room).
    const std::string written = write_pickle(value);
    PlainDataLimits room = limits;
    room.max_memory_bytes *= 4;
    if (write_pickle(read_pickle(written, "written", room)) != written) std::abort();
  }
  try {
    (void)plain_data_json(value, "fuzz input", limits);
  } catch (const std::invalid_argument&) {
  }
  SnapshotTrace t;
  try {
    t = snapshot_trace(read_pytorch_snapshot(value, "fuzz input"), "fuzz input");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  validate(t.trace);  // throws, and so reports, if the reader let a bad event through
  if (t.stream.size() != t.trace.size() || t.stack.size() != t.trace.size() || t.entry.size() != t.trace.size())
    std::abort();
  for (std::size_t i = 0; i < t.trace.size(); ++i) {
    if (t.stream[i] < 0 || static_cast<std::size_t>(t.stream[i]) >= t.streams.size()) std::abort();
    if (t.stack[i] >= static_cast<int>(t.stacks.size())) std::abort();
    (void)t.label(i);
  }
  if (t.live_at_start > t.trace.size() || t.peak_reserved < t.reserved_at_start) std::abort();
  return 0;
}
