// Runs a shell command for the tests that drive the tidepool binary (the
// command line, the device choice, the window under xvfb-run).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace tidepool::testing {

struct CommandResult {
  int status = -1;     // the exit status; -1 when killed by a signal
  std::string output;  // stdout and stderr together
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace tidepool::testing
