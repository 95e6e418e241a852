// The settings as checkpoints and run folders keep them: what is written
// reads back the same, and files from before a setting existed still read.
#include "engine/run/run_settings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace tidepool {
namespace {

TEST(RunSettings, TheMemorySettingsSurviveJson) {
  RunSettings s;
  s.memory = {.mode = OffloadMode::autoswap,
              .lookahead = 2,
              .compress = true,
              .swap_score = SwapScore::bo,
              .swap_weights = {.aoa = 0.125, .doa = 0.0, .wdoa = 0.6, .swdoa = 0.275},
              .budget_bytes = 3 << 20,
              .link_gbps = 2.5,
              .host_memory = HostMemory::pageable,
              .copy_engine = CopyEngine::threads,
              .ranks = 3,
              .bucket_bytes = 12345,
              .sync_bn = true};
  const RunSettings back = run_settings_from_json(nlohmann::json::parse(to_json(s).dump()));
  EXPECT_EQ(back.memory, s.memory);
  EXPECT_EQ(back.memory.swap_weights, s.memory.swap_weights);
  EXPECT_EQ(back.memory.swap_score, SwapScore::bo);
}

TEST(RunSettings, FilesFromBeforeZhuangsChoicesReadPinnedAndStream) {
  RunSettings pageable;
  pageable.memory.host_memory = HostMemory::pageable;
  nlohmann::json j = to_json(pageable);
  EXPECT_EQ(j.at("host_memory"), "pageable");
  j.erase("host_memory");
  j.erase("copy_engine");
  const RunSettings back = run_settings_from_json(j);
  EXPECT_EQ(back.memory.host_memory, HostMemory::pinned);
  EXPECT_EQ(back.memory.copy_engine, CopyEngine::stream);
  j["copy_engine"] = "dma";
  EXPECT_THROW(run_settings_from_json(j), std::invalid_argument);
}

TEST(RunSettings, FilesFromBeforeSyncBnReadEachRanksOwnStatistics) {
  RunSettings synced;
  synced.memory.sync_bn = true;
  nlohmann::json j = to_json(synced);
  EXPECT_EQ(j.at("sync_bn"), true);
  j.erase("sync_bn");
  EXPECT_FALSE(run_settings_from_json(j).memory.sync_bn);
}

TEST(RunSettings, TheFusionSurvivesJsonAndFilesFromBeforeItReadNone) {
  RunSettings fused;
  fused.fuse = Fusion::relu;
  nlohmann::json j = to_json(fused);
  EXPECT_EQ(j.at("fuse"), "relu");
  EXPECT_EQ(run_settings_from_json(j).fuse, Fusion::relu);
  j.erase("fuse");
  EXPECT_EQ(run_settings_from_json(j).fuse, Fusion::none);
  j["fuse"] = "conv";
  EXPECT_THROW(run_settings_from_json(j), std::invalid_argument);
}

TEST(RunSettings, FilesFromBeforeTheMixReadEqualWeights) {
  nlohmann::json j = to_json(RunSettings{});
  j.erase("swap_weights");
  j.erase("swap_score");
  const RunSettings back = run_settings_from_json(j);
  EXPECT_EQ(back.memory.swap_weights, SwapWeights{});
  EXPECT_EQ(back.memory.swap_weights, (SwapWeights{0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(back.memory.swap_score, SwapScore::swdoa);
}

TEST(RunSettings, SwapWeightsMustBeNumbersOfAtLeastZero) {
  auto expect_refused = [](const nlohmann::json& weights, const std::string& part) {
    nlohmann::json j = to_json(RunSettings{});
    j["swap_weights"] = weights;
    try {
      run_settings_from_json(j);
      ADD_FAILURE() << "accepted " << weights.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_refused({{"aoa", 1}, {"doa", -0.5}, {"wdoa", 0}, {"swdoa", 0}}, "swap weight 'doa'");
  expect_refused({{"aoa", "1"}, {"doa", 0}, {"wdoa", 0}, {"swdoa", 0}}, "swap weight 'aoa'");
  expect_refused(nlohmann::json::array({1, 1, 1, 1}), "'swap_weights' must be an object");
  nlohmann::json j = to_json(RunSettings{});
  j["swap_weights"].erase("swdoa");
  EXPECT_THROW(run_settings_from_json(j), nlohmann::json::out_of_range) << "a missing weight, as a missing key";
}

}  // namespace
}  // namespace tidepool
