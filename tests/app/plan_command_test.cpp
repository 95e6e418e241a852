// The dry-run planner's figures are what real runs observe.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "app/commands/plan_command.h"
#include "engine/memory/allocator.h"
#include "engine/memory/pool_event.h"
#include "engine/memory/replay.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_facts.h"
#include "engine/plan/memory_plan.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
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

// plan_rows plans its rows on every core at once: each row is the row
// planned alone, in the order asked, refusals included.
TEST(Plan, RowsPlannedTogetherAreTheRowsPlannedOneByOne) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  std::vector<MemorySettings> rows;
  for (OffloadMode mode : {OffloadMode::base, OffloadMode::all, OffloadMode::conv})
    for (const std::string& h : allocator_names()) {
      MemorySettings m;
      m.mode = mode;
      m.heuristic = h;
      rows.push_back(m);
    }
  MemorySettings too_small;  // AutoSwap in a budget below what it can do: refused
  too_small.mode = OffloadMode::autoswap;
  too_small.budget_bytes = 4096;
  rows.insert(rows.begin() + 5, too_small);
  const std::vector<PlanRow> together = plan_rows(net, 8, kernels, rows);
  ASSERT_EQ(together.size(), rows.size());
  EXPECT_FALSE(together[5].fits());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    const std::vector<PlanRow> alone = plan_rows(net, 8, kernels, {rows[i]});
    EXPECT_EQ(together[i].settings, rows[i]);
    EXPECT_EQ(together[i].refusal, alone[0].refusal);
    EXPECT_EQ(memory_json(together[i].memory), memory_json(alone[0].memory));
  }
}

// A row that is neither a plan nor a refusal (a bad setting) fails the
// whole table with the error of the first such row, as planned in order.
TEST(Plan, ABadRowFailsTheTableWithTheFirstBadRowsError) {
  const Network net = testing::residual_net();
  CpuKernels kernels;
  std::vector<MemorySettings> rows(6);
  rows[2].heuristic = "no-such-fit";
  rows[4].heuristic = "another-unknown";
  try {
    plan_rows(net, 8, kernels, rows);
    FAIL() << "a row with an unknown heuristic was planned";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-fit'"), std::string::npos) << e.what();
  }
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
    ASSERT_EQ(rows.size(), 6u * 2 * 2 * allocator_names().size());  // vDNN's 4 modes and the 2 recompute modes
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
  ASSERT_EQ(j.size(), 24u);  // 6 modes x 2 algos x 2 orders
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
  ASSERT_EQ(rows.size(), 7u * 2 * 2);
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

// What a rank's gradient buckets add to its plan, derived from the plan's
// own schedule: the buckets' tensors and the gradients they pack, and the
// steady iteration replayed as the plan replays it, watching each bucket's
// block come and go, so that the load can be read with the buckets taken
// out at every event.
struct BucketFigures {
  std::size_t buckets = 0;
  std::size_t bucket_bytes = 0;    // the bucket tensors'
  std::size_t gradient_bytes = 0;  // the gradients packed into them
  std::size_t distinct_gradients = 0, packed_gradients = 0;
  std::size_t peak_load = 0;           // as the replay saw it, buckets in
  std::size_t peak_without_buckets = 0;
};

class BucketWatch final : public PoolObserver {
 public:
  explicit BucketWatch(std::set<std::int64_t> buckets) : buckets_(std::move(buckets)) {}
  void on_pool_event(const PoolEvent& e) override {
    if (e.event < last_event_) peak_ = without_ = 0;  // the steady iteration begins: its figures are the plan's
    last_event_ = e.event;
    if (buckets_.count(e.id)) {
      if (e.action == PoolAction::place) live_ += e.block.bytes;
      if (e.action == PoolAction::free) live_ -= e.block.bytes;
    }
    peak_ = std::max(peak_, e.load_bytes);
    without_ = std::max(without_, e.load_bytes - live_);
  }
  std::size_t peak() const { return peak_; }
  std::size_t peak_without() const { return without_; }

 private:
  std::set<std::int64_t> buckets_;
  int last_event_ = -1;
  std::size_t live_ = 0, peak_ = 0, without_ = 0;
};

BucketFigures bucket_figures(const MemoryPlan& p) {
  BucketFigures f;
  std::set<std::int64_t> ids;
  std::set<int> grads;
  for (const GradientBucket& b : p.train.buckets) {
    ids.insert(b.tensor);
    f.bucket_bytes += p.train.tensors[static_cast<std::size_t>(b.tensor)].info.bytes();
    for (int g : b.grads) {
      f.gradient_bytes += p.train.tensors[static_cast<std::size_t>(g)].info.bytes();
      grads.insert(g);
      ++f.packed_gradients;
    }
  }
  f.buckets = p.train.buckets.size();
  f.distinct_gradients = grads.size();
  BucketWatch watch(ids);
  const ScheduleReplay r = replay_schedule(p.train, p.settings.heuristic, p.pool_bytes, p.park_horizon(), &watch);
  EXPECT_TRUE(r.fits());
  f.peak_load = watch.peak();
  f.peak_without_buckets = watch.peak_without();
  return f;
}

// A rank of two holds its gradients again, in buckets, and nothing else:
// for every row of `tidepool plan`, the buckets pack each of resnet20's
// 272,474 gradients once (1 MiB buckets: two), and the rank's load with
// the buckets' blocks taken out peaks exactly where one process's does.
TEST(Plan, TheGradientBucketsAreAllARankAdds) {
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  constexpr std::size_t kGradientBytes = 272474 * sizeof(float);
  ASSERT_EQ(static_cast<std::size_t>(net.parameter_count()) * sizeof(float), kGradientBytes);
  CpuKernels kernels;
  const auto one = plan_table(net, 64, kernels, {"best-fit"});
  const auto two = plan_table(net, 64, kernels, {"best-fit"}, TransferMode::async, false, 0, nullptr, Precision::fp32,
                              HostMemory::pinned, 2);
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < two.size(); ++i) {
    const MemorySettings& m = two[i].settings;
    SCOPED_TRACE(std::string(to_string(m.mode)) + " " + to_string(m.scheme) + " " + to_string(m.order));
    ASSERT_TRUE(two[i].fits()) << two[i].refusal;
    const MemoryPlan single = plan_memory(net, 64, one[i].settings, kernels);
    const MemoryPlan rank = plan_memory(net, 64, m, kernels);
    EXPECT_TRUE(single.train.buckets.empty());
    const BucketFigures f = bucket_figures(rank);
    EXPECT_EQ(f.buckets, 2u);
    EXPECT_EQ(f.gradient_bytes, kGradientBytes);
    EXPECT_EQ(f.bucket_bytes, kGradientBytes) << "a bucket holds its gradients and nothing more";
    EXPECT_EQ(f.packed_gradients, f.distinct_gradients) << "a gradient in two buckets";
    EXPECT_EQ(f.peak_load, rank.peak_load_bytes()) << "the replay above is the plan's";
    EXPECT_EQ(two[i].memory.peak_load_bytes, rank.peak_load_bytes());
    EXPECT_EQ(f.peak_without_buckets, single.peak_load_bytes()) << "the buckets are all a rank adds";
    EXPECT_EQ(one[i].memory.peak_load_bytes, single.peak_load_bytes());
  }
}

// `plan --ranks 2`: one rank at half the global batch, with its gradient
// buckets in the pool, and the header says so. Each row's extra peak is
// what its buckets add at the peak, derived as above.
TEST(Plan, ARankOfADataParallelRunHoldsItsGradientBuckets) {
  std::ostringstream one, two;
  plan_command(plan_request("resnet20", "cifar10", 64, "best-fit", 1, true), one);
  plan_command(plan_request("resnet20", "cifar10", 128, "best-fit", 2, true), two);
  const auto a = nlohmann::json::parse(one.str()), b = nlohmann::json::parse(two.str());
  ASSERT_EQ(a.size(), b.size());
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  CpuKernels kernels;
  const auto rows = plan_table(net, 64, kernels, {"best-fit"}, TransferMode::async, false, 0, nullptr, Precision::fp32,
                               HostMemory::pinned, 2);
  auto key = [](const nlohmann::json& r) {
    return r["mode"].get<std::string>() + " " + r["algo"].get<std::string>() + " " + r["order"].get<std::string>();
  };
  std::size_t checked = 0, with_buckets_at_peak = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(key(a[i]), key(b[i]));
    const auto extra = b[i]["peak_load_bytes"].get<std::int64_t>() - a[i]["peak_load_bytes"].get<std::int64_t>();
    for (const PlanRow& row : rows) {
      const MemorySettings& m = row.settings;
      if (std::string(to_string(m.mode)) + " " + to_string(m.scheme) + " " + to_string(m.order) != key(b[i])) continue;
      const BucketFigures f = bucket_figures(plan_memory(net, 64, m, kernels));
      EXPECT_EQ(extra, static_cast<std::int64_t>(f.peak_load - f.peak_without_buckets)) << b[i].dump();
      with_buckets_at_peak += extra > 0;
      ++checked;
    }
  }
  EXPECT_EQ(checked, a.size()) << "every row of the table was derived";
  EXPECT_GT(with_buckets_at_peak, 0u) << "in some rows a bucket is alive at the peak";
  std::ostringstream text;
  plan_command(plan_request("resnet20", "cifar10", 128, "best-fit", 2), text);
  EXPECT_NE(text.str().find("each of 2 ranks: batch 64 of the global 128"), std::string::npos) << text.str();
  EXPECT_THROW(plan_command(plan_request("resnet20", "cifar10", 127, "", 2), text), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool::app
