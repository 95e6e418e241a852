// A run's options, declared once (app/options/run_options.h): what a resume
// may change is the memory settings, transfers and throttles, never what
// changes the numbers; every setting an option names is one the run's
// settings record.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "app/options/run_options.h"

namespace tidepool::app {
namespace {

std::set<std::string> named(OnResume rule) {
  std::set<std::string> names;
  for (const RunOption& o : run_option_table())
    if (o.on_resume == rule) names.insert(o.name);
  return names;
}

TEST(RunOptions, AResumeMayChangeExactlyTheSettingsThatNeverChangeTheNumbers) {
  EXPECT_EQ(named(OnResume::may_change),
            (std::set<std::string>{"mode", "heuristic", "transfer", "order", "lookahead", "compress", "swap-score",
                                   "budget", "host-memory", "copy-engine", "bucket-size", "link-gbps",
                                   "compress-threads"}));
  for (const char* numbers : {"model", "fuse", "dataset", "sync-bn", "batch-size", "lr", "lr-schedule", "momentum",
                              "weight-decay", "seed", "device", "profile", "algo", "precision", "trace-iterations"})
    EXPECT_TRUE(named(OnResume::must_match).count(numbers)) << numbers;
  EXPECT_EQ(named(OnResume::invocation),
            (std::set<std::string>{"data", "epochs", "iterations", "out", "resume", "force", "stop-after",
                                   "checkpoint-every"}));
}

TEST(RunOptions, EverySettingAnOptionNamesIsOneTheRunRecords) {
  const nlohmann::json recorded = to_json(RunSettings{});
  for (const RunOption& o : run_option_table()) {
    if (o.on_resume == OnResume::invocation && !recorded.contains(o.settings_key)) continue;  // this invocation's
    EXPECT_TRUE(recorded.contains(o.settings_key)) << o.name << " -> " << o.settings_key;
  }
  ASSERT_NE(find_run_option("bucket-size"), nullptr);
  EXPECT_EQ(find_run_option("bucket-size")->settings_key, "bucket_bytes");
  EXPECT_EQ(find_run_option("no-such-option"), nullptr);
  EXPECT_TRUE(find_run_option("out")->run_folder);
  EXPECT_FALSE(find_run_option("mode")->run_folder);
}

}  // namespace
}  // namespace tidepool::app
