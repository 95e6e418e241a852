// A command of the command line (app/cli.cpp): the options it declares on
// its CLI11 app, bound to a request it owns, and what runs when the command
// line named it. Each command is one file of app/commands/.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace tidepool::app {

struct Command {
  CLI::App* cmd = nullptr;
  // The process's exit status. `quiet`: --quiet was given (no progress).
  std::function<int(bool quiet)> run;
};

}  // namespace tidepool::app
