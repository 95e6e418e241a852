// Byte counts as people read them. One formatter for every message, label
// and picture, so the figure a refusal names is the figure the views show.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tidepool {

// Three significant figures in the largest unit that keeps the value >= 1:
// "512 B", "3.00 KiB", "12.5 MiB", "850 MiB", "1.25 GiB".
std::string format_bytes(std::size_t bytes);

// The other way: "900MiB", "1.5GiB", "512MB", "64KiB", "1e9" or a plain byte
// count (K, M, G, T alone are binary), rounded to whole bytes. Throws
// std::invalid_argument naming the text and what is wrong with it for
// anything else: no number, an unknown unit, nan or inf, zero or negative,
// under a byte, or more than a size_t holds.
std::size_t parse_bytes(const std::string& text);

// A size as parse_bytes reads it back exactly: whole MiB, or else bytes
// ("63MiB", "65536000").
std::string exact_bytes_text(std::size_t bytes);

// `v` in lowercase hexadecimal without a prefix, zero-padded to at least
// `min_digits` digits: hex_text(255) is "ff", hex_text(255, 4) "00ff".
std::string hex_text(std::uint64_t v, int min_digits = 1);

}  // namespace tidepool
