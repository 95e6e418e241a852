// The command line's words for engine settings, both ways, with errors
// that list what is valid.
#pragma once

#include <cstddef>
#include <string>

#include "engine/core/bytes_text.h"
#include "engine/device/kernels.h"
#include "engine/plan/schedule.h"

namespace tidepool::app {

OffloadMode parse_mode(const std::string& s);  // base | all | conv | aconv ("dyn" is the runner's)
TransferMode parse_transfer(const std::string& s);
SwapScore parse_swap_score(const std::string& s);
AllocOrder parse_order(const std::string& s);
ConvScheme parse_scheme(const std::string& s);
const char* to_string(ConvScheme s);

// "900MiB", "1.5GiB", "512MB", "64KiB", "1e9" or a plain byte count.
std::size_t parse_bytes(const std::string& s);

// Schedule::park_horizon as the JSON outputs write it (summary.json, plan
// --json): the count of blocks parked at once, 0 for none, -1 for every one
// until the pool needs the room.
int park_horizon_number(int park_horizon);

}  // namespace tidepool::app
