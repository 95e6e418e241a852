// `tidepool plan` speaks a run's language: a --batch run's options pasted
// after `plan` give that run's row first, equal to the run's summary.json;
// a memory choice given once keeps the table to it, a list plans each, one
// left out is enumerated; under --budget each row says whether it fits;
// the peak's breakdown by role is the same in both.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/run_here.h"
#include "engine/memory/allocator.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool {
namespace {

struct Output {
  int status = 0;
  std::string out;
};

// The command line in this process, its stdout captured.
Output tidepool(const std::string& args) {
  const testing::CommandResult r = testing::run_here(args, testing::Captured::stdout_only);
  return {r.status, r.output};
}

nlohmann::json plan_json(const std::string& options) {
  const Output r = tidepool("plan " + options + " --json");
  EXPECT_EQ(r.status, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

// A one-iteration resnet20 run on a tiny CIFAR-10 in `dir`, with `memory`
// options: its options, for `--batch` and for `plan` alike.
std::string tiny_run_options(const testing::TempDir& dir, const std::string& memory) {
  testing::write_tiny_cifar10(dir.path() / "data");
  return "--model resnet20 --dataset cifar10 --data " + (dir.path() / "data").string() + " --iterations 1 " + memory +
         " --out " + (dir.path() / "run").string();
}

nlohmann::json run_summary(const testing::TempDir& dir) {
  std::ifstream file(dir.path() / "run" / "summary.json");
  return nlohmann::json::parse(file);
}

TEST(PlanARun, TheRunsCommandLineAfterPlanGivesItsRowFirstAsItsSummarySays) {
  testing::TempDir dir("plan-a-run");
  const std::string options = tiny_run_options(dir, "--batch-size 32 --mode all --algo m --heuristic cnmem");
  ASSERT_EQ(tidepool("--quiet --batch " + options).status, 0);
  const nlohmann::json summary = run_summary(dir);
  const nlohmann::json rows = plan_json(options);
  // mode, algo and heuristic given: the alternatives are the other order.
  ASSERT_EQ(rows.size(), 2u) << rows.dump(1);
  const nlohmann::json& mine = rows[0];
  EXPECT_TRUE(mine.at("this_run").get<bool>());
  EXPECT_FALSE(rows[1].at("this_run").get<bool>());
  for (const char* key : {"mode", "algo", "order", "heuristic"}) EXPECT_EQ(mine.at(key), summary.at(key)) << key;
  EXPECT_EQ(rows[1].at("order"), "derivative-first");
  for (const char* key : {"pool_bytes", "peak_load_bytes", "footprint_bytes", "largest_free_at_peak_bytes",
                          "offloaded_bytes", "pinned_host_bytes", "park_horizon"})
    EXPECT_EQ(mine.at(key), summary.at(key)) << key;
}

// What the peak is made of (docs/memory.md#what-the-figures-mean): the
// run's summary.json breaks its peak down as plan does for the same
// options, the roles summing to the peak load, and --batch prints it.
// Async transfers, so blocks freed after their copies may be parked.
TEST(PlanARun, TheRunsPeakBreakdownIsThePlans) {
  testing::TempDir dir("plan-a-run-breakdown");
  const std::string options = tiny_run_options(dir, "--batch-size 16 --mode all --transfer async --heuristic best-fit");
  const Output run = tidepool("--batch " + options);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("\npeak load by role: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("; beside it, below the extent: parked at peak "), std::string::npos) << run.out;
  const nlohmann::json summary = run_summary(dir);
  const nlohmann::json mine = plan_json(options).at(0);
  ASSERT_TRUE(mine.at("this_run").get<bool>());
  for (const char* key : {"peak_breakdown", "parked_at_peak_bytes", "holes_at_peak_bytes", "peak_load_bytes"})
    EXPECT_EQ(mine.at(key), summary.at(key)) << key;
  std::size_t by_role = 0;
  for (const auto& [role, bytes] : summary.at("peak_breakdown").items()) by_role += bytes.get<std::size_t>();
  EXPECT_EQ(by_role, summary.at("peak_load_bytes").get<std::size_t>());
  EXPECT_GT(summary.at("peak_breakdown").at("weight").get<std::size_t>(), 0u);
  EXPECT_GT(summary.at("peak_breakdown").at("activation").get<std::size_t>(), 0u);
}

TEST(PlanARun, AChoiceGivenOnceFiltersAListPlansEachAndOneLeftOutIsEnumerated) {
  const std::string net = "--model resnet20 --dataset cifar10 --batch-size 8";
  const nlohmann::json one = plan_json(net + " --mode conv --algo p --order derivative-first --heuristic first-fit");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].at("mode"), "conv");
  EXPECT_EQ(one[0].at("order"), "derivative-first");
  EXPECT_EQ(one[0].at("heuristic"), "first-fit");

  const nlohmann::json listed = plan_json(net + " --mode base,all --algo m --order prefetch-first --heuristic "
                                                "smartpool,best-fit");
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[0].at("mode"), "base");  // the run's: each list's first
  EXPECT_EQ(listed[0].at("heuristic"), "smartpool");
  EXPECT_TRUE(listed[0].at("this_run").get<bool>());
  int all_rows = 0;
  for (const auto& row : listed) all_rows += row.at("mode") == "all";
  EXPECT_EQ(all_rows, 2);

  // Nothing given: a run's defaults first (base, p, prefetch-first,
  // best-fit), then every mode x algo x order x heuristic: vDNN's four
  // and the two recompute modes.
  const nlohmann::json every = plan_json(net);
  EXPECT_EQ(every.size(), 6u * 2 * 2 * allocator_names().size());
  EXPECT_EQ(every[0].at("mode"), "base");
  EXPECT_EQ(every[0].at("algo"), "p");
  EXPECT_EQ(every[0].at("heuristic"), "best-fit");
}

// What plan cannot plan from the options alone is refused, not ignored.
TEST(PlanARun, AResumeAndTheCudaDeviceWithoutAProfileAreRefused) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(tidepool("plan --resume runs/x").status, 1);
  EXPECT_EQ(tidepool("plan --device cuda").status, 1);
  EXPECT_EQ(tidepool("plan --device sim").status, 1);  // not the host's answers for a GPU
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("to plan a run being resumed, give the options it was started with"), std::string::npos) << said;
  EXPECT_NE(said.find("for the cuda device, give a profile measured on it"), std::string::npos) << said;
  EXPECT_NE(said.find("--device sim runs on a performance profile: give --profile"), std::string::npos) << said;
}

TEST(PlanARun, UnderABudgetEachRowSaysWhetherItFits) {
  const std::string net = "--model resnet20 --dataset cifar10 --batch-size 8 --algo m --order prefetch-first "
                          "--heuristic best-fit";
  const nlohmann::json free = plan_json(net + " --mode base,all");
  EXPECT_FALSE(free[0].contains("fits_budget")) << "no budget, no budget column";
  const std::size_t base_pool = free[0].at("pool_bytes").get<std::size_t>();
  const std::size_t all_pool = free[1].at("pool_bytes").get<std::size_t>();
  ASSERT_LT(all_pool, base_pool);
  // A budget between the two: the run (all) plans in it; base does not fit.
  const std::size_t budget = (all_pool + base_pool) / 2 / 1024 * 1024;
  const nlohmann::json rows = plan_json(net + " --mode all,base --budget " + std::to_string(budget));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].at("fits").get<bool>());
  EXPECT_TRUE(rows[0].at("fits_budget").get<bool>());
  EXPECT_EQ(rows[0].at("pool_bytes").get<std::size_t>(), budget) << "a run with --budget has that pool";
  EXPECT_TRUE(rows[1].at("fits").get<bool>()) << "planned: its figures are there";
  EXPECT_FALSE(rows[1].at("fits_budget").get<bool>());
  EXPECT_EQ(rows[1].at("pool_bytes").get<std::size_t>(), base_pool) << "an alternative shows the pool it needs";
  const Output text = tidepool("plan " + net + " --mode all,base --budget " + std::to_string(budget));
  EXPECT_NE(text.out.find("fits"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("   no\n"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace tidepool
