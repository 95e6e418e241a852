// `tidepool models`: one row per model and input kind.
#pragma once

#include <ostream>

namespace tidepool::app {

void print_models(std::ostream& out);

}  // namespace tidepool::app
