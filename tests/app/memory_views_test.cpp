// One truth about memory, as a user meets it: `tidepool plan`'s row,
// summary.json of a --batch run and the window's session status give the
// same pool, peak load, footprint, largest free block at the peak and
// pinned bytes for the same settings, because each is a view of the same
// MemoryPlan.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/batch_run.h"
#include "app/memory_report.h"
#include "app/commands/plan_command.h"
#include "app/session.h"
#include "engine/device/cpu/cpu_kernels.h"
#include "models/registry.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool::app {
namespace {

RunSettings tiny_run(const std::filesystem::path& data, const std::filesystem::path& out, const MemorySettings& m) {
  RunSettings s;
  s.model = "resnet20";
  s.dataset = "cifar10";
  s.data_dir = data.string();
  s.batch_size = 32;
  s.iterations = 2;
  s.out = out.string();
  s.progress = false;
  s.memory = m;
  return s;
}

TEST(MemoryViews, PlanRowSummaryAndStatusGiveTheSameFigures) {
  testing::TempDir dir("views");
  testing::write_tiny_cifar10(dir.path() / "data");
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  CpuKernels kernels;
  const std::size_t autoswap_budget = 45u << 20;  // base needs about 60 MiB at batch 32, AutoSwap at least 34
  const MemorySettings cases[] = {
      {},
      {.mode = OffloadMode::all, .heuristic = "cnmem"},
      {.mode = OffloadMode::conv, .transfer = TransferMode::sync, .heuristic = "smartpool"},
      {.mode = OffloadMode::aconv, .compress = true, .heuristic = "high-end"},
      {.mode = OffloadMode::autoswap, .budget_bytes = autoswap_budget},
      {.mode = OffloadMode::all, .host_memory = HostMemory::pageable, .copy_engine = CopyEngine::threads},
  };
  int n = 0;
  for (const MemorySettings& m : cases) {
    SCOPED_TRACE(std::string(to_string(m.mode)) + " " + m.heuristic);
    // The plan row with these settings.
    const auto rows =
        plan_table(net, 32, kernels, {m.heuristic}, m.transfer, m.compress, autoswap_budget, nullptr, m.precision,
                   m.host_memory);
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const PlanRow& r) {
      return r.settings.mode == m.mode && r.settings.scheme == m.scheme && r.settings.order == m.order;
    });
    ASSERT_NE(row, rows.end());
    ASSERT_TRUE(row->fits()) << row->refusal;
    // summary.json of a run with them.
    const auto summary = run_batch(tiny_run(dir.path() / "data", dir.path() / ("run" + std::to_string(n++)), m),
                                   std::nullopt);
    // The session status the window shows.
    TrainingSession session(tiny_run(dir.path() / "data", dir.path() / "unused", m));
    session.start(nullptr);
    const MemorySummary status = session.status().memory;

    for (const auto& [key, planned, shown] :
         {std::tuple{"pool_bytes", row->memory.pool_bytes, status.pool_bytes},
          std::tuple{"peak_load_bytes", row->memory.peak_load_bytes, status.peak_load_bytes},
          std::tuple{"footprint_bytes", row->memory.footprint_bytes, status.footprint_bytes},
          std::tuple{"largest_free_at_peak_bytes", row->memory.largest_free_at_peak_bytes,
                     status.largest_free_at_peak_bytes},
          std::tuple{"pinned_host_bytes", row->memory.pinned_bytes, status.pinned_bytes},
          std::tuple{"pageable_host_bytes", row->memory.pageable_bytes, status.pageable_bytes}}) {
      SCOPED_TRACE(key);
      EXPECT_EQ(summary.at(key).get<std::size_t>(), planned);
      EXPECT_EQ(shown, planned);
    }
    EXPECT_EQ(summary.at("park_horizon").get<int>(), park_horizon_number(row->memory.park_horizon));
    EXPECT_EQ(status.park_horizon, row->memory.park_horizon);
  }
}

}  // namespace
}  // namespace tidepool::app
