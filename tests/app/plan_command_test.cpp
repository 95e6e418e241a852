// The dry-run planner's figures are what real runs observe.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/commands/plan_command.h"
#include "engine/memory/allocator.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_plan.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"

namespace tidepool::app {
namespace {

// `tidepool plan --model M --dataset D --batch-size B [--heuristic H] [--ranks R] [--json]`.
PlanRequest plan_request(const std::string& model, const std::string& dataset, std::int64_t batch,
                         const std::string& heuristic = "", int ranks = 1, bool json = false) {
  PlanRequest q;
  q.run.model = model;
  q.run.dataset = dataset;
  q.run.batch_size = batch;
  if (!heuristic.empty()) {
    q.run.memory.heuristic = heuristic;
    q.lists.heuristics = {heuristic};
  }
  q.ranks = ranks;
  q.json = json;
  return q;
}

// Async transfers park offloaded blocks where the pool has room, which
// moves placement: the table is made per transfer semantics, and each row
// checked against a real run in the row's pool.
TEST(Plan, FiguresEqualWhatARealRunObserves) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  const testing::Batch b = testing::random_batch(8, 3);
  for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
    const auto rows = plan_table(net, 8, kernels, allocator_names(), transfer);
    ASSERT_EQ(rows.size(), 4u * 2 * 2 * allocator_names().size());
    const auto parked =
        std::count_if(rows.begin(), rows.end(), [](const PlanRow& r) { return r.memory.park_horizon > 0; });
    if (transfer == TransferMode::sync)
      EXPECT_EQ(parked, 0);
    else
      EXPECT_GT(parked, 0) << "some minimum pools have room to park in";
    for (const PlanRow& row : rows) {
      const MemorySettings& m = row.settings;
      SCOPED_TRACE(std::string(to_string(m.mode)) + " " + to_string(m.scheme) + " " + to_string(m.order) + " " +
                   m.heuristic + " " + to_string(transfer));
      ASSERT_TRUE(row.fits()) << row.refusal;
      CpuDevice device;
      MemorySettings in_pool = m;
      in_pool.budget_bytes = row.memory.pool_bytes;
      Trainer trainer(device, net, {.batch = 8, .memory = in_pool});
      const IterationResult first = trainer.train_step(b.images.data(), b.labels.data());
      const IterationResult steady = trainer.train_step(b.images.data(), b.labels.data());
      EXPECT_EQ(steady.memory.peak_load_bytes, row.memory.peak_load_bytes);
      EXPECT_EQ(steady.memory.footprint_bytes, row.memory.footprint_bytes);
      EXPECT_EQ(steady.memory.largest_free_at_peak.bytes, row.memory.largest_free_at_peak_bytes);
      EXPECT_LE(first.memory.footprint_bytes, row.memory.pool_bytes);
      EXPECT_EQ(trainer.train_schedule().pinned_bytes, row.memory.pinned_bytes);
      EXPECT_EQ(trainer.memory().park_horizon(), row.memory.park_horizon);
    }
  }
}

// AutoSwap's rows: as little offloaded as fits the budget, and a run with
// that budget observes the row.
TEST(Plan, AutoSwapRowsAreWhatARunWithTheBudgetDoes) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  const auto fixed = plan_table(net, 16, kernels, {"best-fit"});
  auto find = [&](OffloadMode mode) {
    return *std::find_if(fixed.begin(), fixed.end(), [&](const PlanRow& r) {
      return r.settings.mode == mode && r.settings.scheme == ConvScheme::p;
    });
  };
  const PlanRow all = find(OffloadMode::all), base = find(OffloadMode::base);
  CpuDevice probe;
  const std::size_t least =
      Trainer(probe, net, {.batch = 16, .memory = {.mode = OffloadMode::autoswap}}).memory().minimum_pool_bytes;
  ASSERT_LT(least, base.memory.pool_bytes);
  const std::size_t budget = (least + base.memory.pool_bytes) / 2;
  const auto rows = plan_table(net, 16, kernels, {"best-fit"}, TransferMode::async, false, budget);
  ASSERT_EQ(rows.size(), fixed.size() + 4);
  const testing::Batch b = testing::random_batch(16, 1);
  int checked = 0;
  for (const PlanRow& row : rows) {
    if (row.settings.mode != OffloadMode::autoswap || row.settings.scheme != ConvScheme::p) continue;
    SCOPED_TRACE(to_string(row.settings.order));
    ++checked;
    ASSERT_TRUE(row.fits()) << row.refusal;
    EXPECT_EQ(row.memory.pool_bytes, budget) << "a run with --budget gets that pool";
    EXPECT_LE(row.memory.needed_pool_bytes, budget);
    EXPECT_GT(row.memory.offloaded_bytes, 0u);
    EXPECT_LT(row.memory.offloaded_bytes, all.memory.offloaded_bytes);
    CpuDevice device;
    Trainer trainer(device, net, {.batch = 16, .memory = row.settings});
    const IterationResult r = trainer.train_step(b.images.data(), b.labels.data());
    EXPECT_EQ(trainer.train_schedule().offloaded_bytes(), row.memory.offloaded_bytes);
    EXPECT_EQ(trainer.memory().load_limit_bytes, row.memory.load_limit_bytes);
    EXPECT_EQ(r.memory.peak_load_bytes, row.memory.peak_load_bytes);
  }
  // Below what AutoSwap can do, the row says so and names what would work.
  const auto tight = plan_table(net, 16, kernels, {"best-fit"}, TransferMode::async, false, least / 2);
  const auto refused = std::count_if(tight.begin(), tight.end(), [&](const PlanRow& r) {
    return r.settings.mode == OffloadMode::autoswap && !r.fits() && r.memory.minimum_pool_bytes > least / 2 &&
           r.refusal.find("smallest budget that works") != std::string::npos;
  });
  EXPECT_EQ(refused, 4);
  EXPECT_EQ(checked, 2);
}

// Compressed offloads change only the pinned column: two staging slots,
// which a run with --compress reports too.
TEST(Plan, CompressedOffloadsNeedOnlyTheStagingSlotsPinned) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  const auto plain = plan_table(net, 8, kernels, {"best-fit"});
  const auto packed = plan_table(net, 8, kernels, {"best-fit"}, TransferMode::async, /*compress=*/true);
  ASSERT_EQ(plain.size(), packed.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const MemorySettings& m = plain[i].settings;
    SCOPED_TRACE(std::string(to_string(m.mode)) + " " + to_string(m.scheme) + " " + to_string(m.order));
    EXPECT_EQ(packed[i].memory.pool_bytes, plain[i].memory.pool_bytes);
    EXPECT_EQ(packed[i].memory.park_horizon, plain[i].memory.park_horizon);
    EXPECT_EQ(packed[i].memory.uncompressed_pinned_bytes, plain[i].memory.pinned_bytes);
    if (m.mode == OffloadMode::base) {
      EXPECT_EQ(packed[i].memory.pinned_bytes, 0u);
      continue;
    }
    // Two slots of the largest offloaded tensor: less than offloading
    // uncompressed needs where more is offloaded (all), more where only a
    // tensor or two is (aconv on this small network).
    if (m.mode == OffloadMode::all) EXPECT_LT(packed[i].memory.pinned_bytes, plain[i].memory.pinned_bytes);
    CpuDevice device;
    Trainer trainer(device, net, {.batch = 8, .memory = packed[i].settings});
    const Schedule& s = trainer.train_schedule();
    std::size_t largest = 0;
    for (const PlannedTensor& t : s.tensors)
      if (t.offloaded) largest = std::max(largest, round_up(t.info.bytes()));
    EXPECT_EQ(s.pinned_bytes, packed[i].memory.pinned_bytes);
    EXPECT_EQ(packed[i].memory.pinned_bytes, 2 * largest);
  }
}

TEST(Plan, JsonHasTheDocumentedKeys) {
  std::ostringstream out;
  plan_command(plan_request("resnet20", "cifar10", 4, "best-fit", 1, true), out);
  const auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j.size(), 16u);  // 4 modes x 2 algos x 2 orders
  for (const char* key : {"this_run", "fuse", "mode", "algo", "order", "heuristic", "fits", "peak_load_bytes", "pool_bytes",
                          "needed_pool_bytes", "minimum_pool_bytes", "footprint_bytes", "competitive_ratio",
                          "largest_free_at_peak_bytes", "offloaded_bytes", "pinned_host_bytes", "parks_offloads",
                          "park_horizon", "parking_pool_bytes", "load_limit_bytes"})
    EXPECT_TRUE(j[0].contains(key)) << key;
  EXPECT_THROW(plan_command(plan_request("resnet20", "mnist", 4), out), std::invalid_argument);
  EXPECT_THROW(plan_command(plan_request("resnet20", "cifar10", 4, "nope"), out), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool::app

namespace tidepool::app {
namespace {

// With a performance model the table gains AccUDNN's rows, and every row
// its prediction: the one the MemoryPlan carries for those settings.
TEST(Plan, AProfileAddsAccudnnRowsAndPredictions) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  const PerfModel model(*specification_profile("m40"));
  const auto rows = plan_table(net, 8, kernels, {"best-fit"}, TransferMode::async, false, 0, &model);
  ASSERT_EQ(rows.size(), 5u * 2 * 2);
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [](const PlanRow& r) { return r.settings.mode == OffloadMode::accudnn; }), 4);
  for (const PlanRow& r : rows) {
    ASSERT_TRUE(r.predicted) << to_string(r.settings.mode);
    const MemoryPlan p = plan_memory(net, 8, r.settings, kernels, {}, &model);
    EXPECT_DOUBLE_EQ(r.predicted->iteration_us, p.predicted->iteration_us);
    EXPECT_DOUBLE_EQ(r.predicted->stall_us, p.predicted->stall_us);
  }
  const auto plain = plan_table(net, 8, kernels, {"best-fit"});
  EXPECT_TRUE(std::none_of(plain.begin(), plain.end(), [](const PlanRow& r) { return r.predicted.has_value(); }));
}

}  // namespace
}  // namespace tidepool::app

namespace tidepool::app {
namespace {

// `plan --ranks 2`: one rank at half the global batch, with its gradient
// buckets in the pool, and the header says so.
TEST(Plan, ARankOfADataParallelRunHoldsItsGradientBuckets) {
  std::ostringstream one, two;
  plan_command(plan_request("resnet20", "cifar10", 64, "best-fit", 1, true), one);
  plan_command(plan_request("resnet20", "cifar10", 128, "best-fit", 2, true), two);
  const auto a = nlohmann::json::parse(one.str()), b = nlohmann::json::parse(two.str());
  ASSERT_EQ(a.size(), b.size());
  // resnet20's 0.27 M gradients again, as buckets, in every row.
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto extra = b[i]["peak_load_bytes"].get<std::int64_t>() - a[i]["peak_load_bytes"].get<std::int64_t>();
    EXPECT_GE(extra, 0) << b[i].dump();
    EXPECT_LE(extra, 272474 * 4 + 4096) << b[i].dump();
  }
  std::ostringstream text;
  plan_command(plan_request("resnet20", "cifar10", 128, "best-fit", 2), text);
  EXPECT_NE(text.str().find("each of 2 ranks: batch 64 of the global 128"), std::string::npos) << text.str();
  EXPECT_THROW(plan_command(plan_request("resnet20", "cifar10", 127, "", 2), text), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool::app
