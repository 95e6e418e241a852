// `tidepool plan`: the dry-run planner's table. For every offload mode x
// conv algorithm x allocation order x heuristic it makes the MemoryPlan a
// run with those settings would execute (engine/plan/memory_plan.h) and
// prints its figures: what that run will observe.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/fusion.h"
#include "engine/core/network.h"
#include "engine/device/kernel_queries.h"
#include "engine/schedule/memory_settings.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/accudnn_schedule.h"
#include "engine/plan/memory_summary.h"

namespace tidepool::app {

struct PlanRow {
  MemorySettings settings;  // the row's mode, algo, order, heuristic (and budget for AutoSwap)
  MemorySummary memory;
  // A run with these settings would be refused (an AutoSwap budget below
  // what it can do): why, and memory.minimum_pool_bytes is what would work.
  std::string refusal;
  bool fits() const { return refusal.empty(); }
  // With a performance model: one iteration's predicted time and stall.
  std::optional<Prediction> predicted;
};

// `transfer`: async (the default) parks offloaded blocks where the pool has
// room for it, which moves placement; sync never does. `compress`: the
// pinned column is the two staging slots of compressed offloads (placement
// does not change). `autoswap_budget`: also AutoSwap's rows, offloading as
// little as fits a pool of that many bytes (as a run with --budget does);
// 0: none. `model`: also AccUDNN's rows (in that budget, or unbounded),
// and every row's predicted iteration time and stall.
std::vector<PlanRow> plan_table(const Network& net, std::int64_t batch, const KernelQueries& kernels,
                                const std::vector<std::string>& heuristics,
                                TransferMode transfer = TransferMode::async, bool compress = false,
                                std::size_t autoswap_budget = 0, const PerfModel* model = nullptr,
                                Precision precision = Precision::fp32, HostMemory host_memory = HostMemory::pinned,
                                int ranks = 1, std::size_t bucket_bytes = kDefaultBucketBytes);

struct PlanRequest {
  std::string model = "resnet18";
  Fusion fuse = Fusion::none;
  std::string dataset = "cifar10";  // cifar10 | cifar100 | fashion-mnist | imagenet (sets the input size and classes)
  std::int64_t batch_size = 128;
  std::string heuristic;  // empty: every heuristic
  TransferMode transfer = TransferMode::async;
  bool compress = false;
  std::vector<Precision> precisions = {Precision::fp32};  // a row set for each
  HostMemory host_memory = HostMemory::pinned;  // pageable: a pageable column, and pinned is the staging buffers
  std::size_t budget_bytes = 0;  // AutoSwap's rows for this budget (0: none)
  std::string profile;           // a performance profile: accudnn rows and predicted times
  // Data-parallel: one rank of `ranks`, at batch_size / ranks (batch_size
  // is the global batch), with its gradient buckets.
  int ranks = 1;
  std::size_t bucket_bytes = kDefaultBucketBytes;
  bool json = false;
};

void plan_command(const PlanRequest& request, std::ostream& out);

}  // namespace tidepool::app
