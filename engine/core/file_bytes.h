// A whole file as bytes, with the one message every reader of a user's
// file gives when it cannot; and written whole: to a temporary file beside
// it, renamed over the target, so that a kill never leaves half a file.
#pragma once

#include <string>
#include <string_view>

namespace tidepool {

// The contents of `path`. Throws std::invalid_argument "cannot open
// <what> '<path>'" or "error reading <what> '<path>'".
std::string read_file_bytes(const std::string& path, const std::string& what = "file");

// Writes `bytes` to `path` + ".tmp", then renames it to `path`. Throws
// std::runtime_error naming the file when it cannot be written.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace tidepool
