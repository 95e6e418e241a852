// `tidepool profile`: a performance profile (engine/perf/profile.h) for the
// sim device and the AccUDNN planner. Either measured on this machine's
// cpu device (or the cuda device) at the paper's five batch sizes, each
// step's time and each copy's, then fitted; or derived from a GPU's
// published specification (--spec). Prints the fits, writes the JSON.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "app/commands/command.h"
#include "engine/core/fusion.h"
#include "engine/core/network.h"
#include "engine/perf/profile.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

struct ProfileRequest {
  // The network measured (as a run with its --model, --fuse and --dataset
  // builds it), the largest batch profiled (also 1/8, 1/4, 1/2 and 2/3 of
  // it), the device and link measured, and the conv algorithms the runs it
  // drives use (--algo): a run's options, with a run's defaults.
  RunSettings run;
  int iterations = 3;  // timed iterations per batch size (the median is kept)
  std::string spec;    // a GPU specification instead of measuring
  std::string out;     // the JSON file
  bool progress = true;
};

int profile_command(const ProfileRequest& q, std::ostream& out);

// `tidepool profile -o FILE [options]`.
Command add_profile_command(CLI::App& cli);

// Measures `net` (q.model on q.dataset) on a real device at 1/8 ... 1 of
// q.batch_size, with the conv algorithms and link of the runs the profile
// will drive; its notes say how. `tidepool profile`, and tune without one.
Profile measure_device(const ProfileRequest& q, const Network& net);

// Every convolution workspace a plan of `net` asks `device` at these
// batches (train and eval, both algorithm schemes, f32 and each 16-bit
// type the device computes natively), without the 16-bit weight copy:
// what `profile --device cuda` keeps in the profile, so that a plan from
// the profile places cuDNN's own figures (GpuQueries) on any host.
std::vector<MeasuredWorkspace> record_workspaces(const Network& net, const std::vector<std::int64_t>& batches,
                                                 const KernelQueries& device);

// The fits of a profile as a table, one class per line.
void print_profile(const Profile& p, std::ostream& out);

}  // namespace tidepool::app
