#include "engine/core/file_bytes.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tidepool {

std::string read_file_bytes(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open " + what + " '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::invalid_argument("error reading " + what + " '" + path + "'");
  return bytes;
}

}  // namespace tidepool
