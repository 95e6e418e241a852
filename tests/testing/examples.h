// Files under examples/, which the tests read as users do.
#pragma once

#include <string>

namespace tidepool::testing {

// The path of examples/<name> in the source tree.
inline std::string example_path(const std::string& name) {
  return std::string(TIDEPOOL_SOURCE_DIR) + "/examples/" + name;
}

}  // namespace tidepool::testing
