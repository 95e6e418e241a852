// Byte counts as people read them. One formatter for every message, label
// and picture, so the figure a refusal names is the figure the views show.
#pragma once

#include <cstddef>
#include <string>

namespace tidepool {

// Three significant figures in the largest unit that keeps the value >= 1:
// "512 B", "3.00 KiB", "12.5 MiB", "850 MiB", "1.25 GiB".
std::string format_bytes(std::size_t bytes);

// The other way: "900MiB", "1.5GiB", "512MB", "64KiB", "1e9" or a plain byte
// count (K, M, G alone are binary), rounded to the nearest byte. Throws
// std::invalid_argument naming the text for anything else, for zero, a
// negative size, one under half a byte, and one of 2^63 bytes or more.
std::size_t parse_bytes(const std::string& text);

// A size as parse_bytes reads it back exactly: whole MiB, or else bytes
// ("63MiB", "65536000").
std::string exact_bytes_text(std::size_t bytes);

}  // namespace tidepool
