#include "engine/core/bytes_text.h"

#include <cctype>
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
  auto refuse = [&](const std::string& why) { throw std::invalid_argument("the size '" + s + "' " + why); };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::out_of_range&) {  // beyond a double: too large, or too small to be a byte
    refuse("is out of range");
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = s.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  struct Unit {
    const char* name;
    double scale;
  };
  // Case-insensitively: KB, MB, GB, TB are powers of 1000; KiB ... TiB,
  // Ki ... Ti (Kubernetes) and the shorthands k, m, g, t (as Docker reads
  // them) powers of 1024.
  constexpr Unit kUnits[] = {{"", 1},
                             {"b", 1},
                             {"kib", 1024.0},
                             {"mib", 1048576.0},
                             {"gib", 1073741824.0},
                             {"tib", 1099511627776.0},
                             {"ki", 1024.0},
                             {"mi", 1048576.0},
                             {"gi", 1073741824.0},
                             {"ti", 1099511627776.0},
                             {"kb", 1e3},
                             {"mb", 1e6},
                             {"gb", 1e9},
                             {"tb", 1e12},
                             {"k", 1024.0},
                             {"m", 1048576.0},
                             {"g", 1073741824.0},
                             {"t", 1099511627776.0}};
  std::string lower = unit;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const Unit* found = nullptr;
  for (const Unit& u : kUnits)
    if (lower == u.name) found = &u;
  if (used == 0 || !found) refuse("cannot be read (write e.g. 900MiB, 1.5GiB, 2g, 512MB or a byte count: KB, MB, GB are powers of 1000, "
           "KiB, MiB, GiB and k, m, g powers of 1024)");
  if (!std::isfinite(value)) refuse("is not a finite number");  // stod reads "nan" and "inf"
  if (value <= 0) refuse("is not positive");
  const double bytes = std::round(value * found->scale);
  if (bytes < 1) refuse("is less than a byte");
  // 2^64 is exactly representable; anything from it up does not fit a size_t.
  if (bytes >= 18446744073709551616.0) refuse("does not fit in 64 bits");
  return static_cast<std::size_t>(bytes);
}

std::string exact_bytes_text(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  return bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + "MiB" : std::to_string(bytes);
}

std::string hex_text(std::uint64_t v, int min_digits) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 15]);
    v >>= 4;
  } while (v);
  if (static_cast<int>(s.size()) < min_digits) s.insert(0, static_cast<std::size_t>(min_digits) - s.size(), '0');
  return s;
}

}  // namespace tidepool
