// The dry-run planner's figures are what real runs observe.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "app/plan_command.h"
#include "app/settings_text.h"
#include "engine/memory/allocator.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/test_networks.h"
#include "engine/run/trainer.h"

namespace tidepool::app {
namespace {

// Async transfers park offloaded blocks where the pool has room, which
// moves placement: the table is made per transfer semantics, and each row
// checked against a real run in the row's pool.
TEST(Plan, FiguresEqualWhatARealRunObserves) {
  const Network net = tidepool::testing::residual_net();
  CpuKernels kernels;
  std::vector<float> images(8 * 3 * 8 * 8);
  std::vector<std::int32_t> labels(8, 1);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : images) v = normal(rng);
  for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
    const auto rows = plan_table(net, 8, kernels, allocator_names(), transfer);
    ASSERT_EQ(rows.size(), 4u * 2 * 2 * allocator_names().size());
    const auto parked = std::count_if(rows.begin(), rows.end(), [](const PlanRow& r) { return r.park_horizon > 0; });
    if (transfer == TransferMode::sync)
      EXPECT_EQ(parked, 0);
    else
      EXPECT_GT(parked, 0) << "some minimum pools have room to park in";
    for (const PlanRow& row : rows) {
      SCOPED_TRACE(row.mode + " " + row.algo + " " + row.order + " " + row.heuristic + " " + to_string(transfer));
      CpuDevice device;
      TrainerOptions o{.batch = 8,
                       .plan = {.scheme = parse_scheme(row.algo),
                                .mode = row.mode == "base" ? OffloadMode::base : parse_mode(row.mode),
                                .order = parse_order(row.order),
                                .transfer = transfer},
                       .heuristic = row.heuristic,
                       .budget_bytes = row.pool_bytes};
      Trainer trainer(device, net, o);
      const IterationResult first = trainer.train_step(images.data(), labels.data());
      const IterationResult steady = trainer.train_step(images.data(), labels.data());
      EXPECT_EQ(steady.peak_load_bytes, row.peak_load_bytes);
      EXPECT_EQ(steady.footprint_bytes, row.footprint_bytes);
      EXPECT_LE(first.footprint_bytes, row.pool_bytes);
      EXPECT_EQ(trainer.train_schedule().pinned_bytes, row.pinned_host_bytes);
      EXPECT_EQ(trainer.park_horizon(), row.park_horizon);
      EXPECT_NEAR(row.competitive_ratio, static_cast<double>(steady.footprint_bytes) / steady.peak_load_bytes, 1e-12);
    }
  }
}

// AutoSwap's rows: as little offloaded as fits the budget, and a run with
// that budget observes the row.
TEST(Plan, AutoSwapRowsAreWhatARunWithTheBudgetDoes) {
  const Network net = tidepool::testing::residual_net();
  CpuKernels kernels;
  const auto fixed = plan_table(net, 16, kernels, {"best-fit"});
  auto find = [&](const char* mode) {
    return *std::find_if(fixed.begin(), fixed.end(),
                         [&](const PlanRow& r) { return r.mode == mode && r.algo == "p"; });
  };
  const PlanRow all = find("all"), base = find("base");
  CpuDevice probe;
  const std::size_t least = Trainer(probe, net, {.batch = 16, .plan = {.mode = OffloadMode::autoswap}}).minimum_budget();
  ASSERT_LT(least, base.pool_bytes);
  const std::size_t budget = (least + base.pool_bytes) / 2;
  const auto rows = plan_table(net, 16, kernels, {"best-fit"}, TransferMode::async, false, budget);
  ASSERT_EQ(rows.size(), fixed.size() + 4);
  std::vector<float> images(16 * 3 * 8 * 8, 0.5f);
  std::vector<std::int32_t> labels(16, 1);
  int checked = 0;
  for (const PlanRow& row : rows) {
    if (row.mode != "autoswap" || row.algo != "p") continue;
    SCOPED_TRACE(row.order);
    ++checked;
    EXPECT_LE(row.pool_bytes, budget);
    EXPECT_GT(row.offloaded_bytes, 0u);
    EXPECT_LT(row.offloaded_bytes, all.offloaded_bytes);
    CpuDevice device;
    Trainer trainer(device, net,
                    {.batch = 16, .plan = {.mode = OffloadMode::autoswap, .order = parse_order(row.order)},
                     .budget_bytes = budget});
    const IterationResult r = trainer.train_step(images.data(), labels.data());
    EXPECT_EQ(trainer.train_schedule().offloaded_bytes(), row.offloaded_bytes);
    EXPECT_EQ(trainer.train_schedule().peak_load_bytes, row.peak_load_bytes);
    EXPECT_EQ(r.peak_load_bytes, row.peak_load_bytes);
  }
  EXPECT_EQ(checked, 2);
}

// Compressed offloads change only the pinned column: two staging slots,
// which a run with --compress reports too.
TEST(Plan, CompressedOffloadsNeedOnlyTheStagingSlotsPinned) {
  const Network net = tidepool::testing::residual_net();
  CpuKernels kernels;
  const auto plain = plan_table(net, 8, kernels, {"best-fit"});
  const auto packed = plan_table(net, 8, kernels, {"best-fit"}, TransferMode::async, /*compress=*/true);
  ASSERT_EQ(plain.size(), packed.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    SCOPED_TRACE(plain[i].mode + " " + plain[i].algo + " " + plain[i].order);
    EXPECT_EQ(packed[i].pool_bytes, plain[i].pool_bytes);
    EXPECT_EQ(packed[i].park_horizon, plain[i].park_horizon);
    if (plain[i].mode == "base") {
      EXPECT_EQ(packed[i].pinned_host_bytes, 0u);
      continue;
    }
    // Two slots of the largest offloaded tensor: less than offloading
    // uncompressed needs where more is offloaded (all), more where only a
    // tensor or two is (aconv on this small network).
    if (plain[i].mode == "all") EXPECT_LT(packed[i].pinned_host_bytes, plain[i].pinned_host_bytes);
    CpuDevice device;
    Trainer trainer(device, net,
                    {.batch = 8, .plan = {.scheme = parse_scheme(packed[i].algo), .mode = parse_mode(packed[i].mode),
                                          .order = parse_order(packed[i].order), .compress = true}});
    const Schedule& s = trainer.train_schedule();
    std::size_t largest = 0;
    for (const PlannedTensor& t : s.tensors)
      if (t.offloaded) largest = std::max(largest, round_up(t.info.bytes()));
    EXPECT_EQ(s.pinned_bytes, packed[i].pinned_host_bytes);
    EXPECT_EQ(packed[i].pinned_host_bytes, 2 * largest);
  }
}

TEST(Plan, JsonHasTheDocumentedKeys) {
  std::ostringstream out;
  plan_command({.model = "resnet20", .dataset = "cifar10", .batch_size = 4, .heuristic = "best-fit", .json = true}, out);
  const auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j.size(), 16u);  // 4 modes x 2 algos x 2 orders
  for (const char* key : {"mode", "algo", "order", "heuristic", "peak_load_bytes", "pool_bytes", "competitive_ratio",
                          "largest_free_block_bytes", "pinned_host_bytes", "parks_offloads", "park_horizon"})
    EXPECT_TRUE(j[0].contains(key)) << key;
  EXPECT_THROW(plan_command({.model = "resnet20", .dataset = "mnist"}, out), std::invalid_argument);
  EXPECT_THROW(plan_command({.model = "resnet20", .heuristic = "nope"}, out), std::invalid_argument);
  EXPECT_THROW(plan_command({.model = "resnet20", .transfer = "later"}, out), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool::app
