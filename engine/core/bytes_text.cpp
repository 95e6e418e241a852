#include "engine/core/bytes_text.h"

#include <cstdio>

namespace tidepool {

std::string format_bytes(std::size_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " B";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, kUnits[unit]);
  return text;
}

}  // namespace tidepool
