// Nothing the user already has is lost, and a refused start leaves the disk
// as it was: each case runs the binary in a folder of its own and compares
// every file under it, byte for byte, before and after.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool {
namespace {

namespace fs = std::filesystem;

// Every file under `root` (relative path -> bytes), folders included as "".
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string name = fs::relative(entry.path(), root).string();
    if (entry.is_directory()) {
      files[name + "/"] = "";
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    files[name] = bytes.str();
  }
  return files;
}

class RunFolderSafety : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_tiny_cifar10(dir.path() / "data", 64, 32); }
  // The binary, started in the test's folder, on the tiny dataset.
  testing::CommandResult run(const std::string& args) {
    return testing::run_command("cd " + dir.path().string() + " && " + TIDEPOOL_BINARY +
                                " --batch --quiet --dataset cifar10 --data data --batch-size 16 " + args);
  }
  // A finished run of 3 iterations in `name`.
  void train(const std::string& name) {
    const auto r = run("--iterations 3 --out " + name);
    ASSERT_EQ(r.status, 0) << r.output;
  }
  testing::TempDir dir{"run-folder-safety"};
};

TEST_F(RunFolderSafety, ResumingAFinishedRunChangesNothingAndSaysSo) {
  train("r");
  const auto before = snapshot(dir.path());
  const auto r = run("--resume r");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("is finished (3 of 3 iterations): nothing to do"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(RunFolderSafety, ResumingWithFewerIterationsThanTrainedIsRefused) {
  train("r");
  const auto before = snapshot(dir.path());
  const auto r = run("--resume r --iterations 2");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("never cut back (give --iterations 3 or more"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(dir.path()), before);
}

// --force replaces another run, never the one being continued: the first
// invocation's traced iterations (1 and 2 of them) stay as they were.
TEST_F(RunFolderSafety, ResumingWithALaterTargetContinuesTheRun) {
  const auto first = run("--iterations 3 --trace-iterations 2 --out r");
  ASSERT_EQ(first.status, 0) << first.output;
  const auto traced = snapshot(dir.path() / "r").at("events.bin");
  const auto r = run("--resume r --iterations 4 --force");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(snapshot(dir.path() / "r").at("events.bin"), traced);
  std::ifstream in(dir.path() / "r" / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary.at("iterations"), 4);
  EXPECT_EQ(summary.at("status"), "done");
}

// A resumed run given another --out writes there under a new run's rules:
// a folder holding another run is refused and left as it was.
TEST_F(RunFolderSafety, ResumingIntoAnotherRunsFolderIsRefused) {
  const auto stopped = run("--iterations 4 --stop-after 2 --out a");
  ASSERT_EQ(stopped.status, 0) << stopped.output;
  train("b");
  const auto before = snapshot(dir.path());
  const auto r = run("--resume a --out b");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("--out b holds a run"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(dir.path()), before);
}

// Settings that would change the numbers are refused, all of them named;
// memory settings, which never change them, apply.
TEST_F(RunFolderSafety, ResumingRefusesOtherNumbersAndAppliesMemorySettings) {
  const auto stopped = run("--iterations 6 --stop-after 2 --out r");
  ASSERT_EQ(stopped.status, 0) << stopped.output;
  const auto before = snapshot(dir.path());
  const auto refused = run("--resume r --lr 0.5 --seed 3 --mode all");
  EXPECT_EQ(refused.status, 1) << refused.output;
  EXPECT_NE(refused.output.find("--lr 0.5"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--seed 3 (the run's: 1)"), std::string::npos) << refused.output;
  EXPECT_EQ(snapshot(dir.path()), before);

  const auto resumed = run("--resume r --mode all --stop-after 2");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming with --mode all (was base)"), std::string::npos) << resumed.output;
  const auto again = run("--resume r --heuristic cnmem");
  ASSERT_EQ(again.status, 0) << again.output;
  std::ifstream in(dir.path() / "r" / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary.at("mode"), "all");
  EXPECT_EQ(summary.at("heuristic"), "cnmem");
  // The summary keeps what each resume changed, and from when.
  const nlohmann::json expected = nlohmann::json::parse(R"([
      {"option": "--mode", "was": "base", "now": "all", "from_iteration": 3},
      {"option": "--heuristic", "was": "best-fit", "now": "cnmem", "from_iteration": 5}])");
  EXPECT_EQ(summary.at("resumed_with"), expected) << summary.dump(1);
  // Decimal settings as given, not as a float's nearest double.
  EXPECT_EQ(summary.at("settings").at("lr").dump(), "0.1");
  EXPECT_EQ(summary.at("settings").at("weight_decay").dump(), "0.0005");
  // Offloading and placement never change the numbers: the same bits as a run in base.
  const auto straight = run("--iterations 6 --out straight");
  ASSERT_EQ(straight.status, 0) << straight.output;
  std::ifstream sin(dir.path() / "straight" / "summary.json");
  EXPECT_EQ(summary.at("param_checksum"), nlohmann::json::parse(sin).at("param_checksum"));
}

TEST_F(RunFolderSafety, OutIntoARunIsRefusedAndForceReplacesIt) {
  train("r");
  const auto before = snapshot(dir.path());
  const auto refused = run("--iterations 2 --out r");
  EXPECT_EQ(refused.status, 1) << refused.output;
  EXPECT_NE(refused.output.find("holds a run"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--resume r"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--force"), std::string::npos) << refused.output;
  EXPECT_EQ(snapshot(dir.path()), before);

  // --force with a start that is refused later still changes nothing.
  const auto bad = run("--iterations 2 --out r --force --device sim");
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_EQ(snapshot(dir.path()), before);

  // Another rank's traced file of the old run goes too.
  std::ofstream(dir.path() / "r" / "trace.rank1.json") << "{}";
  const auto replaced = run("--iterations 2 --out r --force --device sim --profile v100");
  ASSERT_EQ(replaced.status, 0) << replaced.output;
  std::ifstream in(dir.path() / "r" / "summary.json");
  EXPECT_EQ(nlohmann::json::parse(in).at("iterations"), 2);
  EXPECT_FALSE(fs::exists(dir.path() / "r" / "checkpoint.bin") &&
               snapshot(dir.path() / "r").at("checkpoint.bin") == before.at("r/checkpoint.bin"))
      << "the old run's checkpoint survived --force";
  EXPECT_FALSE(fs::exists(dir.path() / "r" / "trace.rank1.json")) << "--force left the old run's files";
}

TEST_F(RunFolderSafety, AFolderOfOtherFilesIsNeverWrittenEvenWithForce) {
  fs::create_directories(dir.path() / "mine");
  std::ofstream(dir.path() / "mine" / "notes.txt") << "my notes";
  const auto before = snapshot(dir.path());
  for (const char* force : {"", " --force"}) {
    const auto r = run(std::string("--iterations 2 --out mine") + force);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("holds files that are not a run's (notes.txt)"), std::string::npos) << r.output;
    EXPECT_EQ(snapshot(dir.path()), before);
  }
  // A run folder with a file of the user's that looks like a run's.
  train("r");
  std::ofstream(dir.path() / "r" / "checkpoint-best.bin") << "kept by hand";
  const auto with_copy = snapshot(dir.path());
  const auto r = run("--iterations 2 --out r --force");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("(checkpoint-best.bin)"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(dir.path()), with_copy);
}

// Each start refused after its settings were read writes no folder, named
// (--out) or default (runs/...).
TEST_F(RunFolderSafety, ARefusedStartLeavesTheDiskAsItWas) {
  const auto before = snapshot(dir.path());
  for (const std::string& args : {std::string("--device sim"), std::string("--device sim --profile nope"),
                                  std::string("--heuristic Best-Fit"), std::string("--budget 100"),
                                  std::string("--mode accudnn"), std::string("--device sim --profile v100 --compress")}) {
    for (const std::string& out : {std::string(" --out fresh"), std::string()}) {
      const auto r = run("--iterations 2 " + args + out);
      EXPECT_NE(r.status, 0) << args << out << "\n" << r.output;
      EXPECT_EQ(snapshot(dir.path()), before) << args << out << "\n" << r.output;
    }
  }
}

// The generated dataset (36 MB, data/generated) is written when a loader
// first reads an image: a start refused before then writes nothing, and a
// sim run, whose loaders hand out labels only, never writes it.
TEST_F(RunFolderSafety, TheGeneratedDatasetIsWrittenOnlyWhenAnImageIsRead) {
  auto generated = [&](const std::string& args) {
    return testing::run_command("cd " + dir.path().string() + " && " + TIDEPOOL_BINARY +
                                " --batch --quiet --dataset generated --batch-size 16 --iterations 2 " + args);
  };
  const auto before = snapshot(dir.path());
  for (const std::string& args : {std::string("--device sim"), std::string("--heuristic Best-Fit"),
                                  std::string("--budget 100"), std::string("--mode accudnn"),
                                  std::string("--device sim --profile v100 --compress")}) {
    const auto r = generated(args);
    EXPECT_NE(r.status, 0) << args << "\n" << r.output;
    EXPECT_EQ(snapshot(dir.path()), before) << args << "\n" << r.output;
  }
  const auto sim = generated("--device sim --profile v100 --out sim");
  ASSERT_EQ(sim.status, 0) << sim.output;
  EXPECT_TRUE(fs::exists(dir.path() / "sim" / "summary.json"));
  EXPECT_FALSE(fs::exists(dir.path() / "data" / "generated")) << "a sim run wrote the generated dataset";
}

}  // namespace
}  // namespace tidepool
