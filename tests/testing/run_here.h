// The tidepool command line run in the test's own process (words split at
// spaces), for the checks where starting the binary (half a second) would be
// most of the time: its exit status and what it wrote to one stream.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.h"
#include "testing/run_command.h"

namespace tidepool::testing {

enum class Captured { stdout_only, stderr_only };

inline CommandResult run_here(const std::string& args, Captured what = Captured::stderr_only) {
  std::vector<std::string> words{"tidepool"};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  CommandResult r;
  if (what == Captured::stdout_only) ::testing::internal::CaptureStdout();
  else ::testing::internal::CaptureStderr();
  r.status = app::run_cli(static_cast<int>(words.size()), argv.data());
  std::fflush(stdout);
  std::fflush(stderr);
  r.output = what == Captured::stdout_only ? ::testing::internal::GetCapturedStdout()
                                           : ::testing::internal::GetCapturedStderr();
  return r;
}

}  // namespace tidepool::testing
