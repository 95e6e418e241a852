// A run folder's metrics.csv as the tests compare it: the data rows, each
// without the two columns that measure time (images_per_second, seconds),
// which no two runs share.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tidepool::testing {

// Empty when there is no file; a row of the wrong width is kept whole, so
// that comparing it fails.
inline std::vector<std::string> metrics_rows_without_times(const std::filesystem::path& run) {
  std::ifstream in(run / "metrics.csv");
  std::vector<std::string> rows;
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::istringstream row(line);
    for (std::string f; std::getline(row, f, ',');) fields.push_back(f);
    if (fields.size() != 12) {
      rows.push_back("malformed: " + line);
      continue;
    }
    std::string kept;
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (i != 8 && i != 11) kept += fields[i] + ",";
    rows.push_back(kept);
  }
  return rows;
}

}  // namespace tidepool::testing
