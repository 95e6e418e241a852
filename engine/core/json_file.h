// JSON files a user hands us or we leave behind: read with errors that name
// the file, written to a temporary file and renamed over the target, so
// that a kill never leaves half a file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tidepool {

// Throws std::runtime_error "<path>: cannot read ..." (missing, or not
// readable: a folder, say) or "<path>: not JSON (...)".
nlohmann::json read_json_file(const std::string& path);
// Throws std::runtime_error naming the file when it cannot be written.
void write_json_atomically(const std::string& path, const nlohmann::json& j);

}  // namespace tidepool
