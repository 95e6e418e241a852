// The peak load of a MemoryPlan broken down by role
// (docs/memory.md#what-the-figures-mean), for every offload mode the
// planner plans and every heuristic: the parts sum to the peak load
// exactly, the blocks that live all along (weights, momentum) are all
// there, and the load, the parked blocks and the holes at the peak make
// the extent the replay loop reported at that moment. Then the summary's
// JSON: the breakdown under its key, and a summary from before it reads
// as zeros.
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "engine/device/gpu_queries.h"
#include "engine/memory/allocator.h"
#include "engine/memory/replay.h"
#include "engine/perf/perf_model.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_facts.h"
#include "engine/plan/memory_plan.h"
#include "models/registry.h"

namespace tidepool {
namespace {

constexpr std::int64_t kBatch = 32;

std::size_t sum(const RoleBytes& by_role) { return std::accumulate(by_role.begin(), by_role.end(), std::size_t{0}); }

// The pool's extent when the steady iteration's load reached its peak: the
// last placement at the peak's step that brought the load to the peak.
struct ExtentAtPeak final : PoolObserver {
  int peak_event = 0;
  std::size_t peak_load = 0, extent = 0;
  int seen = 0;
  void on_pool_event(const PoolEvent& e) override {
    if (e.action == PoolAction::place && e.event == peak_event && e.load_bytes == peak_load) {
      extent = e.extent_bytes;
      ++seen;
    }
  }
};

// The bytes of the schedule's persistent tensors of `role`, as the pool
// holds them (rounded up): they are live at every moment, so at the peak.
std::size_t persistent_bytes(const Schedule& s, Role role) {
  std::size_t bytes = 0;
  for (int t : s.persistent)
    if (s.tensors[static_cast<std::size_t>(t)].info.role == role) bytes += round_up(s.tensors[t].info.bytes());
  return bytes;
}

void expect_breakdown_adds_up(const MemoryPlan& plan) {
  const MemorySummary m = plan.summary();
  ASSERT_GT(m.peak_load_bytes, 0u);
  EXPECT_EQ(sum(m.peak_load_by_role), m.peak_load_bytes);
  for (Role r : {Role::weight, Role::optimizer_state}) {
    EXPECT_GT(m.peak_load_by_role[static_cast<int>(r)], 0u) << to_string(r);
    EXPECT_EQ(m.peak_load_by_role[static_cast<int>(r)], persistent_bytes(plan.train, r)) << to_string(r);
  }
  EXPECT_GT(m.peak_load_by_role[static_cast<int>(Role::activation)], 0u);

  // The same schedule again in the same pool, watched: at the peak's
  // placement the extent is load + parked + holes.
  ExtentAtPeak watch;
  watch.peak_event = plan.figures.peak_event;
  watch.peak_load = m.peak_load_bytes;
  const ScheduleReplay again =
      replay_schedule(plan.train, plan.settings.heuristic, plan.pool_bytes, plan.park_horizon(), &watch);
  ASSERT_TRUE(again.fits());
  ASSERT_EQ(again.steady.figures.peak_load_by_role, m.peak_load_by_role) << "watched or not, the same replay";
  ASSERT_GT(watch.seen, 0) << "the peak's placement";
  EXPECT_EQ(m.peak_load_bytes + m.parked_at_peak_bytes + m.holes_at_peak_bytes, watch.extent);
  EXPECT_LE(m.largest_free_at_peak_bytes, m.holes_at_peak_bytes) << "the largest hole is one of the holes";
  EXPECT_LE(watch.extent, m.footprint_bytes);
}

TEST(PeakBreakdown, SumsToThePeakLoadForEveryModeAndHeuristic) {
  const Profile v100 = *specification_profile("v100");
  const GpuQueries queries(v100.gpu);  // a GPU's workspaces, so the workspace role has bytes
  const PerfModel model(v100);
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  int plans = 0;
  bool some_workspace = false;
  for (const Choice<OffloadMode>& mode : kOffloadModes) {
    // dyn profiles the fixed modes and runs the one it picks, which is
    // planned here already; plan_memory refuses to plan dyn itself.
    if (mode.value == OffloadMode::dyn) continue;
    for (const std::string& heuristic : allocator_names())
      for (TransferMode transfer : {TransferMode::sync, TransferMode::async}) {
        SCOPED_TRACE(std::string(mode.name) + " " + heuristic + " " + to_string(transfer));
        MemorySettings settings{.mode = mode.value, .transfer = transfer, .heuristic = heuristic};
        if (mode.value == OffloadMode::autoswap) {
          // A budget between the least pool and base's, so AutoSwap offloads some.
          MemorySettings base = settings;
          base.mode = OffloadMode::base;
          const std::size_t base_pool = plan_memory(net, kBatch, base, queries).pool_bytes;
          const std::size_t least = plan_memory(net, kBatch, settings, queries).minimum_pool_bytes;
          settings.budget_bytes = (least + base_pool) / 2;
        }
        const MemoryPlan plan = plan_memory(net, kBatch, settings, queries, {}, &model);
        expect_breakdown_adds_up(plan);
        some_workspace |= plan.summary().peak_load_by_role[static_cast<int>(Role::workspace)] > 0;
        ++plans;
      }
  }
  EXPECT_EQ(plans, 2 * static_cast<int>(allocator_names().size()) * (static_cast<int>(std::size(kOffloadModes)) - 1));
  EXPECT_TRUE(some_workspace) << "a GPU's convolutions take workspace";
}

TEST(PeakBreakdown, TheSummarysJsonKeysItByRoleAndOldSummariesReadZeros) {
  MemorySummary m;
  m.peak_load_bytes = 7000;
  m.peak_load_by_role[static_cast<int>(Role::workspace)] = 4000;
  m.peak_load_by_role[static_cast<int>(Role::activation)] = 2500;
  m.peak_load_by_role[static_cast<int>(Role::weight)] = 500;
  m.parked_at_peak_bytes = 300;
  m.holes_at_peak_bytes = 200;
  const nlohmann::json j = memory_json(m);
  const nlohmann::json& by_role = j.at("peak_breakdown");
  ASSERT_EQ(by_role.size(), static_cast<std::size_t>(kRoleCount)) << "every role, zero or not: " << by_role.dump();
  EXPECT_EQ(by_role.at("workspace"), 4000);
  EXPECT_EQ(by_role.at("activation"), 2500);
  EXPECT_EQ(by_role.at("weight"), 500);
  EXPECT_EQ(by_role.at("optimizer_state"), 0);
  EXPECT_EQ(j.at("parked_at_peak_bytes"), 300);
  EXPECT_EQ(j.at("holes_at_peak_bytes"), 200);
  const MemorySummary back = memory_from_json(j);
  EXPECT_EQ(back.peak_load_by_role, m.peak_load_by_role);
  EXPECT_EQ(back.parked_at_peak_bytes, 300u);
  EXPECT_EQ(back.holes_at_peak_bytes, 200u);
  // Largest first, each with its share of the peak.
  EXPECT_EQ(fact_text(m, MemoryFact::peak_load_by_role),
            "workspace 3.91 KiB (57 %), activation 2.44 KiB (36 %), weight 500 B (7 %)");

  nlohmann::json old = j;  // a summary.json written before the breakdown
  old.erase("peak_breakdown");
  old.erase("parked_at_peak_bytes");
  old.erase("holes_at_peak_bytes");
  const MemorySummary read = memory_from_json(old);
  EXPECT_EQ(read.peak_load_by_role, RoleBytes{});
  EXPECT_EQ(read.parked_at_peak_bytes, 0u);
  EXPECT_EQ(read.holes_at_peak_bytes, 0u);
  EXPECT_EQ(read.peak_load_bytes, 7000u) << "the other figures as before";
}

}  // namespace
}  // namespace tidepool
