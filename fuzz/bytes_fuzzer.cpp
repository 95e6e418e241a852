// The size parser behind --budget (engine/core/bytes_text.h). A size it
// accepts must be at least one byte (it refuses zero), no smaller than the
// number written (every unit is at least a byte; rounding takes off at most
// half of one), and read back exactly from exact_bytes_text(). Anything
// else must be refused with std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/core/bytes_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidepool;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t bytes = 0;
  try {
    bytes = parse_bytes(text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (bytes == 0) std::abort();
  // The number as written (the same prefix the parser reads).
  const double written = std::strtod(text.c_str(), nullptr);
  if (static_cast<double>(bytes) < written - 0.5) std::abort();
  if (parse_bytes(exact_bytes_text(bytes)) != bytes) std::abort();
  if (format_bytes(bytes).empty()) std::abort();
  return 0;
}
