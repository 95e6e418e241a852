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

#include "engine/core/fusion.h"
#include "engine/core/network.h"
#include "engine/perf/profile.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

struct ProfileRequest {
  std::string model = "resnet20";
  Fusion fuse = Fusion::none;  // the network measured: as a run with --fuse builds it
  std::string dataset = "cifar10";
  std::int64_t batch_size = 128;  // the largest profiled: 1/8, 1/4, 1/2, 2/3 and 1 of it
  DeviceKind device = DeviceKind::cpu;
  double link_gbps = 0;
  ConvScheme scheme = ConvScheme::p;  // conv algorithms differ in speed: profile the ones the run uses
  int iterations = 3;
  std::string spec;  // a GPU specification instead of measuring
  std::string out;   // the JSON file
  bool progress = true;
};

int profile_command(const ProfileRequest& q, std::ostream& out);

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
