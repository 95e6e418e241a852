// Byte counts as people read them. One formatter for every message, label
// and picture, so the figure a refusal names is the figure the views show.
#pragma once

#include <cstddef>
#include <string>

namespace tidepool {

// Three significant figures in the largest unit that keeps the value >= 1:
// "512 B", "3.00 KiB", "12.5 MiB", "850 MiB", "1.25 GiB".
std::string format_bytes(std::size_t bytes);

}  // namespace tidepool
