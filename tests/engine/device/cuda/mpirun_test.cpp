// `mpirun -np 2 tidepool --batch --device cuda`: data-parallel training on
// the cuda device as users start it (tests/app/mpirun_test.cpp runs the
// cpu device). Each rank opens the GPU of its rank on the machine: on a
// machine with two GPUs they sum with NCCL, on one with a single GPU they
// share it and sum through host memory (engine/device/cuda/all_reduce.h).
// Skipped without a GPU, without MPI in this build, or without mpirun.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/comm/mpi_communicator.h"
#include "gpu_testing.h"
#include "testing/mpirun.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool {
namespace {

namespace fs = std::filesystem;

nlohmann::json summary_of(const fs::path& run) {
  std::ifstream in(run / "summary.json");
  return nlohmann::json::parse(in);
}

TEST(GpuMpirun, TwoRanksOnTheCudaDeviceTrainTheSameBitsTwice) {
  TIDEPOOL_REQUIRE_GPU();
  if (!MpiCommunicator::available()) GTEST_SKIP() << "this build has no MPI";
  if (testing::run_command("command -v mpirun").status != 0) GTEST_SKIP() << "no mpirun on this machine";
  testing::TempDir dir("gpu-mpirun");
  testing::write_tiny_cifar10(dir.path(), 64, 64);
  const fs::path a = dir.path() / "a", b = dir.path() / "b";
  // The machine's record of timed kernel choices (app/kernel_choices_file.h)
  // in a folder of the test's own: the first run times and records, the
  // second adopts, and the user's record is neither read nor changed.
  const fs::path cache = dir.path() / "cache";
  for (const fs::path& run : {a, b}) {
    const auto r = testing::run_command(
        "XDG_CACHE_HOME=" + cache.string() + " " + testing::mpirun(2) + "-x XDG_CACHE_HOME " + TIDEPOOL_BINARY +
        " --batch --quiet --device cuda --model resnet20 --dataset cifar10 --data " + dir.path().string() +
        " --batch-size 32 --seed 7 --iterations 6 --bucket-size 64KiB --out " + run.string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("data-parallel over 2 ranks (mpi): 16 images per rank"), std::string::npos) << r.output;
  }
  const nlohmann::json sa = summary_of(a), sb = summary_of(b);
  EXPECT_EQ(sa.at("status"), "done");
  EXPECT_EQ(sa.at("ranks"), 2);
  EXPECT_EQ(sa.at("param_checksum"), sb.at("param_checksum"));
  bool recorded = false;
  if (fs::exists(cache / "tidepool" / "kernel-choices"))
    for (const auto& f : fs::directory_iterator(cache / "tidepool" / "kernel-choices")) recorded = recorded || fs::file_size(f) > 0;
  EXPECT_TRUE(recorded) << "the timed choices were not kept under " << cache;
}

}  // namespace
}  // namespace tidepool
