// `tidepool models`: one row per model and input kind.
#pragma once

#include <ostream>

#include "app/commands/command.h"

namespace tidepool::app {

void print_models(std::ostream& out);

// `tidepool models`.
Command add_models_command(CLI::App& cli);

}  // namespace tidepool::app
