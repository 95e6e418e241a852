#include "engine/core/bytes_text.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

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

std::size_t parse_bytes(const std::string& s) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = s.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  struct Unit {
    const char* name;
    double scale;
  };
  constexpr Unit kUnits[] = {{"", 1},          {"B", 1},         {"KiB", 1024.0},    {"MiB", 1048576.0},
                             {"GiB", 1073741824.0}, {"KB", 1e3}, {"MB", 1e6},        {"GB", 1e9},
                             {"K", 1024.0},    {"M", 1048576.0}, {"G", 1073741824.0}};
  if (used > 0 && value > 0 && std::isfinite(value))
    for (const Unit& u : kUnits)
      if (unit == u.name) {
        const double bytes = value * u.scale;
        if (bytes < 0.5) throw std::invalid_argument("the size '" + s + "' is less than one byte");
        // llround's result must fit a long long; no memory is 8 EiB anyway.
        if (bytes >= 0x1p63) throw std::invalid_argument("the size '" + s + "' is too large (8 EiB or more)");
        return static_cast<std::size_t>(std::llround(bytes));
      }
  throw std::invalid_argument("cannot read the size '" + s + "' (write e.g. 900MiB, 1.5GiB, 512MB or a byte count)");
}

std::string exact_bytes_text(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  return bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + "MiB" : std::to_string(bytes);
}

}  // namespace tidepool
