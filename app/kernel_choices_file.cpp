#include "app/kernel_choices_file.h"

#include <unistd.h>

#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <system_error>

namespace tidepool::app {
namespace {

// A line is "<shape> -> <choice>" (engine/device/cuda/conv2d.cpp); the
// shape is what a newer line replaces.
std::string shape_of(const std::string& line) { return line.substr(0, line.find(" -> ")); }

}  // namespace

std::filesystem::path kernel_choices_file(const std::string& device_name, std::filesystem::path cache_home) {
  if (cache_home.empty()) {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
      cache_home = xdg;
    else if (const char* home = std::getenv("HOME"); home && *home)
      cache_home = std::filesystem::path(home) / ".cache";
    else
      return {};
  }
  const std::size_t open = device_name.find('('), close = device_name.rfind(')');
  std::string gpu = open != std::string::npos && close != std::string::npos && close > open
                        ? device_name.substr(open + 1, close - open - 1)
                        : device_name;
  for (char& c : gpu)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.')) c = '_';
  return cache_home / "tidepool" / "kernel-choices" / (gpu + ".txt");
}

std::vector<std::string> read_kernel_choices(const std::filesystem::path& file) {
  std::vector<std::string> lines;
  if (file.empty()) return lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.find(" -> ") != std::string::npos) lines.push_back(line);
  return lines;
}

void remember_kernel_choices(const std::filesystem::path& file, const std::vector<std::string>& lines) {
  if (file.empty() || lines.empty()) return;
  std::map<std::string, std::string> by_shape;
  for (const std::string& line : read_kernel_choices(file)) by_shape[shape_of(line)] = line;
  bool changed = false;
  for (const std::string& line : lines) {
    std::string& kept = by_shape[shape_of(line)];
    changed = changed || kept != line;
    kept = line;
  }
  if (!changed) return;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const std::filesystem::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    for (const auto& [shape, line] : by_shape) out << line << '\n';
    if (!out.flush()) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    std::fprintf(stderr, "tidepool: could not keep the timed kernel choices in %s; later runs time them again\n",
                 file.string().c_str());
  }
}

}  // namespace tidepool::app
