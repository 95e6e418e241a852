// The sim device and the profile command from the command line: a run on
// a GPU specification, AutoSwap's bo weights tuned on simulated iterations,
// and clear refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "app/model_shapes.h"
#include "engine/perf/profile.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool {
namespace {

testing::CommandResult run(const std::string& args) {
  return testing::run_command(std::string(TIDEPOOL_BINARY) + " " + args);
}

TEST(SimCli, TrainsOnASpecificationWithBoWeightsTunedOnSimulatedIterations) {
  testing::TempDir dir("sim_cli");
  testing::write_tiny_cifar10(dir.path());
  const std::string out = (dir.path() / "run").string();
  const auto r = run("--batch --quiet --device sim --profile m40 --model resnet20 --dataset cifar10 --data " +
                     dir.path().string() + " --batch-size 16 --iterations 2 --mode autoswap --swap-score bo "
                     "--budget 16MiB --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("autoswap bo: weights"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("after 30 simulated iterations"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("simulated: no numbers"), std::string::npos) << r.output;
  std::ifstream in(out + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  const std::string text = summary.dump();
  EXPECT_NE(text.find("swap_weights"), std::string::npos) << text;
  EXPECT_NE(text.find("\"profile\":\"m40\""), std::string::npos) << text;
  EXPECT_GT(summary.at("images_per_second").get<double>(), 0);
  EXPECT_EQ(load_profile(out + "/profile.json").name, "NVIDIA Tesla M40 24 GB") << "the profile travels with the run";
}

// The paper-scale run a laptop can do: ImageNet's shapes with no files.
TEST(SimCli, TrainsResnet18AtImageNetShapesWithNoFiles) {
  testing::TempDir dir("sim_imagenet_shapes");
  const std::string out = (dir.path() / "run").string();
  const auto r = run("--batch --quiet --device sim --profile m40 --model resnet18 --dataset imagenet-shapes "
                     "--batch-size 8 --iterations 2 --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("simulated: no numbers"), std::string::npos) << r.output;
  std::ifstream in(out + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary.at("dataset"), "imagenet-shapes");
  EXPECT_EQ(summary.at("iterations"), 2);
  // The ImageNet network: 224x224 input, 1000 classes.
  EXPECT_EQ(summary.at("parameters").get<std::int64_t>(),
            app::model_for_dataset("resnet18", "imagenet").parameter_count());
  EXPECT_GT(summary.at("images_per_second").get<double>(), 0);
}

TEST(SimCli, RefusesWhatCannotWorkInWords) {
  testing::TempDir dir("sim_refusals");
  const std::string out = " --out " + (dir.path() / "run").string();
  auto run = [&](const std::string& args) { return testing::run_command(std::string(TIDEPOOL_BINARY) + " " + args + out); };
  auto refused = [](const testing::CommandResult& r, const std::string& words) {
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << r.output;
  };
  refused(run("--batch --quiet --device sim --iterations 1"), "--device sim runs on a performance profile");
  refused(run("--batch --quiet --device sim --profile no-such-gpu --iterations 1"), "m40, v100, a100, h100");
  refused(run("--batch --quiet --device sim --profile m40 --compress --iterations 1"), "nothing to compress");
  refused(run("--batch --quiet --mode accudnn --iterations 1"), "mode accudnn plans with a performance model");
  refused(run("--batch --quiet --device sim --profile m40 --dataset imagenet-shapes --data " + dir.path().string() +
              " --iterations 1"),
          "--dataset imagenet-shapes reads no files");
  refused(testing::run_command(std::string(TIDEPOOL_BINARY) + " profile --spec k80 -o " + (dir.path() / "k80.json").string()),
          "unknown GPU specification 'k80'");
}

TEST(SimCli, ProfileWritesASpecificationAndMeasuresTheCpuDevice) {
  testing::TempDir dir("profile_cli");
  const std::string spec = (dir.path() / "h100.json").string();
  ASSERT_EQ(run("profile --spec h100 -o " + spec).status, 0);
  EXPECT_EQ(load_profile(spec).source, "specification");
  const std::string measured = (dir.path() / "cpu.json").string();
  const auto r = run("--quiet profile --model resnet20 --batch-size 8 --iterations 1 --algo m -o " + measured);
  ASSERT_EQ(r.status, 0) << r.output;
  const Profile p = load_profile(measured);
  EXPECT_EQ(p.source, "measured");
  EXPECT_NE(p.notes.find("--algo m"), std::string::npos) << "the conv algorithms measured are on record: " << p.notes;
  EXPECT_TRUE(p.fit(WorkClass::conv_forward));
  EXPECT_GT(p.to_host.gbps, 0);
  // 1/8, 1/4, 1/2, 2/3 and 1 of 8: batches 1, 2, 4, 5 and 8.
  std::set<std::int64_t> batches;
  for (const ComputeSample& s : p.compute_samples) batches.insert(s.batch);
  EXPECT_EQ(batches, (std::set<std::int64_t>{1, 2, 4, 5, 8}));
}

}  // namespace
}  // namespace tidepool

namespace tidepool {
namespace {

TEST(TuneCli, TuneAndBatchTuneAgreeAndTheRunRecordsTheDecision) {
  testing::TempDir dir("tune_cli");
  testing::write_tiny_cifar10(dir.path());
  const auto tuned = run("--quiet tune --model resnet20 --budget 40MiB --profile m40 --lr 0.1 --batch-size 128 --json");
  ASSERT_EQ(tuned.status, 0) << tuned.output;
  const nlohmann::json t = nlohmann::json::parse(tuned.output);
  const std::int64_t k = t.at("efficiency_optimal_batch").get<std::int64_t>();
  EXPECT_GE(k, t.at("largest_batch_without_offload").get<std::int64_t>());
  EXPECT_LE(k, t.at("largest_batch_with_offload").get<std::int64_t>());
  EXPECT_GT(t.at("candidates").size(), 1u);

  const std::string out = (dir.path() / "run").string();
  const auto r = run("--batch --quiet --tune --profile m40 --model resnet20 --dataset cifar10 --data " +
                     dir.path().string() + " --budget 40MiB --iterations 1 --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("tune: batch " + std::to_string(k)), std::string::npos) << r.output;
  std::ifstream in(out + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary.at("batch_size").get<std::int64_t>(), k);
  EXPECT_EQ(summary.at("mode"), "accudnn");
  EXPECT_EQ(summary.at("tune").at("efficiency_optimal_batch").get<std::int64_t>(), k);
  // The run's --lr is a float: 0.1f is 0.1 to seven digits.
  EXPECT_NEAR(summary.at("tune").at("learning_rate").get<double>(), t.at("learning_rate").get<double>(), 1e-7);
}

TEST(TuneCli, RefusesWhatCannotBeTuned) {
  auto refused = [](const testing::CommandResult& r, const std::string& words) {
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << r.output;
  };
  refused(run("--batch --quiet --tune --profile m40 --iterations 1"), "--tune picks the batch that fits --budget");
  refused(run("--tune --profile m40 --budget 40MiB"), "--tune is for --batch runs");
  refused(run("--quiet tune --model resnet20 --budget 1MiB --profile m40"), "the smallest budget that works");
  EXPECT_NE(run("tune --model resnet20 --profile m40").status, 0) << "--budget is required";
}

// A simulated run has no numbers and says so: null losses and accuracies
// in summary.json (not zeros a script would average), empty cells in
// metrics.csv, words in the progress line; its checkpoint keeps where the
// run is, not the parameters nobody computed (resnet152's would be 230 MB),
// and the run still resumes from it.
TEST(SimCli, ARunWithoutNumbersSaysSoAndCheckpointsNoParameters) {
  testing::TempDir dir("sim_no_numbers");
  const std::string out = (dir.path() / "run").string();
  const auto r = run("--batch --device sim --profile v100 --model resnet152 --dataset imagenet-shapes "
                     "--batch-size 8 --iterations 3 --stop-after 2 --checkpoint-every 1 --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("no numbers (simulated)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("loss 0.0000"), std::string::npos) << r.output;
  EXPECT_LT(std::filesystem::file_size(out + "/checkpoint.bin"), std::uintmax_t{1} << 20);

  const auto resumed = run("--batch --quiet --resume " + out);
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  std::ifstream in(out + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary.at("iterations"), 3);
  for (const char* key : {"final_test_accuracy", "final_test_top5", "final_test_loss", "final_train_loss"})
    EXPECT_TRUE(summary.at(key).is_null()) << key << ": " << summary.at(key);
  std::ifstream metrics(out + "/metrics.csv");
  std::string header, row;
  std::getline(metrics, header);
  ASSERT_TRUE(std::getline(metrics, row)) << "no epoch row";
  EXPECT_NE(row.find(",,,,,"), std::string::npos) << row;  // train loss to test top-5: empty
}

}  // namespace
}  // namespace tidepool
