// A whole file as bytes, with the one message every reader of a user's
// file gives when it cannot.
#pragma once

#include <string>

namespace tidepool {

// The contents of `path`. Throws std::invalid_argument "cannot open
// <what> '<path>'" or "error reading <what> '<path>'".
std::string read_file_bytes(const std::string& path, const std::string& what = "file");

}  // namespace tidepool
