// `tidepool diff A B`: two finished runs compared figure by figure, and the
// difference it shows is the one `plan` predicts.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "testing/run_here.h"
#include "testing/temp_dir.h"

namespace tidepool {
namespace {

using testing::Captured;
using testing::run_here;

const char* kRun = "--model resnet20 --dataset generated --batch-size 32 --profile v100 --heuristic best-fit";

nlohmann::json figure(const nlohmann::json& diff, const std::string& key) {
  for (const nlohmann::json& f : diff.at("figures"))
    if (f.at("key") == key) return f;
  ADD_FAILURE() << "no figure " << key << " in " << diff.dump();
  return {};
}

// Runs once for the file: two short runs on the simulated V100, base and
// all, and what `plan` says of the same settings.
class DiffCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("diff_command");
    for (const char* mode : {"base", "all"}) {
      const auto r = run_here(std::string("--batch --quiet --device sim --iterations 2 ") + kRun + " --mode " + mode +
                              " --out " + (dir_->path() / mode).string());
      ASSERT_EQ(r.status, 0) << r.output;
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string folder(const char* mode) { return (dir_->path() / mode).string(); }
  static testing::TempDir* dir_;
};
testing::TempDir* DiffCommand::dir_ = nullptr;

TEST_F(DiffCommand, ShowsThePeakLoadReductionThePlanPredicts) {
  const auto d = run_here("diff --json " + folder("base") + " " + folder("all"), Captured::stdout_only);
  ASSERT_EQ(d.status, 0) << d.output;
  const nlohmann::json diff = nlohmann::json::parse(d.output);

  const auto p = run_here(std::string("plan --json --mode base,all --transfer async --order prefetch-first --algo p ") +
                              kRun,
                          Captured::stdout_only);
  ASSERT_EQ(p.status, 0) << p.output;
  std::size_t planned_base = 0, planned_all = 0;
  for (const nlohmann::json& row : nlohmann::json::parse(p.output))
    (row.at("mode") == "base" ? planned_base : planned_all) = row.at("peak_load_bytes").get<std::size_t>();
  ASSERT_GT(planned_base, planned_all);

  const nlohmann::json peak = figure(diff, "peak_load_bytes");
  EXPECT_EQ(peak.at("a").get<std::size_t>(), planned_base);
  EXPECT_EQ(peak.at("b").get<std::size_t>(), planned_all);
  EXPECT_EQ(peak.at("delta").get<double>(), -static_cast<double>(planned_base - planned_all));
  EXPECT_DOUBLE_EQ(peak.at("relative").get<double>(),
                   -static_cast<double>(planned_base - planned_all) / static_cast<double>(planned_base));

  // The peak broken down, a row per role: they add up to the peak on each
  // side, and offloading took its bytes out of the activations.
  std::size_t by_role_a = 0, by_role_b = 0;
  for (const nlohmann::json& f : diff.at("figures"))
    if (f.at("key").get<std::string>().rfind("peak_breakdown.", 0) == 0) {
      by_role_a += f.at("a").get<std::size_t>();
      by_role_b += f.at("b").get<std::size_t>();
    }
  EXPECT_EQ(by_role_a, planned_base);
  EXPECT_EQ(by_role_b, planned_all);
  EXPECT_LT(figure(diff, "peak_breakdown.activation").at("delta").get<double>(), 0);

  // The one setting that differs is named, and nothing else.
  ASSERT_EQ(diff.at("settings").size(), 1u) << diff.dump();
  EXPECT_EQ(diff.at("settings")[0].at("option"), "mode");
  EXPECT_EQ(diff.at("settings")[0].at("a"), "base");
  EXPECT_EQ(diff.at("settings")[0].at("b"), "all");
  // Offloading costs speed on the simulated link, and base offloads nothing.
  EXPECT_LT(figure(diff, "images_per_second").at("delta").get<double>(), 0);
  EXPECT_TRUE(figure(diff, "offloaded_bytes").at("relative").is_null()) << "A is 0: no ratio";
}

TEST_F(DiffCommand, TheTextTableNamesTheSettingAndTheFigures) {
  const auto d = run_here("diff " + folder("base") + " " + folder("all"), Captured::stdout_only);
  ASSERT_EQ(d.status, 0) << d.output;
  EXPECT_NE(d.output.find("mode: base -> all"), std::string::npos) << d.output;
  EXPECT_NE(d.output.find("peak load"), std::string::npos) << d.output;
  EXPECT_NE(d.output.find("images/s"), std::string::npos) << d.output;
  const auto same = run_here("diff " + folder("base") + " " + folder("base"), Captured::stdout_only);
  ASSERT_EQ(same.status, 0) << same.output;
  EXPECT_NE(same.output.find("settings: the same"), std::string::npos) << same.output;
}

TEST_F(DiffCommand, AFolderThatIsNotAFinishedRunIsRefused) {
  const auto missing = run_here("diff " + folder("base") + " " + folder("nope"));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("nope is not a Tidepool run folder: it does not exist"), std::string::npos)
      << missing.output;
  std::filesystem::create_directories(dir_->path() / "empty");
  const auto empty = run_here("diff " + (dir_->path() / "empty").string() + " " + folder("base"));
  EXPECT_EQ(empty.status, 1);
  EXPECT_NE(empty.output.find("no summary.json"), std::string::npos) << empty.output;
}

}  // namespace
}  // namespace tidepool
