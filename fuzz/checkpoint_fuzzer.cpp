// The checkpoint reader (app/checkpoint.h's parse_checkpoint, what
// load_checkpoint does with a file's bytes). Random bytes rarely carry the
// right FNV-1a checksum, so when the first byte is odd the harness appends
// the checksum of the rest: those inputs reach the header and the state.
// Anything the reader does not accept must be refused with a CheckpointError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "app/checkpoint.h"
#include "engine/core/fnv1a.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidepool;
  if (size == 0) return 0;
  std::vector<char> bytes(reinterpret_cast<const char*>(data) + 1, reinterpret_cast<const char*>(data) + size);
  if (data[0] & 1) {
    const std::uint64_t hash = fnv1a(bytes.data(), bytes.size());
    const auto* h = reinterpret_cast<const char*>(&hash);
    bytes.insert(bytes.end(), h, h + sizeof hash);
  }
  try {
    const app::Checkpoint c = app::parse_checkpoint(bytes, "fuzz input");
    // The state is what lies between the header and the checksum.
    if (c.state.size() * sizeof(float) > bytes.size()) std::abort();
  } catch (const app::CheckpointError&) {
  }
  return 0;
}
