// The allocation-trace CSV that `tidepool replay` reads
// (engine/memory/alloc_trace.h). A trace the reader accepts must pass
// validate(), write back to CSV that reads to an equal trace, and peak no
// higher than its allocations' sum; anything else must be refused with
// std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/memory/alloc_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidepool;
  AllocTrace trace;
  try {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    trace = read_trace(in, "fuzz input");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  validate(trace);  // throws, and so reports, if the reader let a bad event through
  std::ostringstream out;
  write_trace(out, trace);
  std::istringstream again(out.str());
  if (read_trace(again, "written back") != trace) std::abort();
  if (peak_load_bytes(trace) > total_alloc_bytes(trace)) std::abort();
  return 0;
}
