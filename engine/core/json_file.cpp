#include "engine/core/json_file.h"

#include "engine/core/file_bytes.h"

#include <filesystem>
#include <fstream>
#include <ios>
#include <stdexcept>

namespace tidepool {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read it (" + (std::filesystem::exists(path) ? "no permission?" : "no such file") + ")");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": not JSON (" + e.what() + ")");
  } catch (const std::ios_base::failure& e) {  // a folder, a read error: the stream's message names no file
    throw std::runtime_error(path + ": cannot read it (" + e.what() + ")");
  }
}

void write_json_atomically(const std::string& path, const nlohmann::json& j) {
  write_file_atomically(path, j.dump(2) + '\n');
}

}  // namespace tidepool
