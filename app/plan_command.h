// `tidepool plan`: the dry-run planner. Replays one iteration's schedule
// through every allocator without computing anything and reports, for
// every offload mode x conv algorithm x allocation order x heuristic, the
// figures a real run with those settings will observe.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine/device/kernels.h"
#include "engine/core/network.h"
#include "engine/plan/schedule.h"

namespace tidepool::app {

struct PlanRow {
  std::string mode, algo, order, heuristic;
  std::size_t peak_load_bytes = 0;
  std::size_t pool_bytes = 0;       // a pool that serves the run from its first iteration
  std::size_t footprint_bytes = 0;  // the steady-state pool extent
  double competitive_ratio = 1;     // footprint / peak load
  std::size_t largest_free_block_bytes = 0;  // inside the footprint, at the peak load
  std::size_t pinned_host_bytes = 0;
  std::size_t offloaded_bytes = 0;  // copied to the host per iteration
  int park_horizon = 0;  // async: offloaded blocks parked at once in this pool (Schedule::park_horizon)
};

// `transfer`: async (the trainer's default) parks offloaded blocks where the
// pool has room for it, which moves placement; sync never does.
// `compress`: the pinned column is the two staging slots of compressed
// offloads (placement does not change).
// `autoswap_budget`: also AutoSwap's rows, offloading as little as fits a
// pool of that many bytes (as a run with --budget does); 0: none.
std::vector<PlanRow> plan_table(const Network& net, std::int64_t batch, Kernels& kernels,
                                const std::vector<std::string>& heuristics,
                                TransferMode transfer = TransferMode::async, bool compress = false,
                                std::size_t autoswap_budget = 0);

struct PlanRequest {
  std::string model = "resnet18";
  std::string dataset = "cifar10";  // cifar10 | cifar100 | imagenet (sets the input size and classes)
  std::int64_t batch_size = 128;
  std::string heuristic;  // empty: every heuristic
  std::string transfer = "async";  // sync | async
  bool compress = false;
  std::string budget;  // AutoSwap's rows for this budget (empty: none)
  bool json = false;
};

void plan_command(const PlanRequest& request, std::ostream& out);

}  // namespace tidepool::app
