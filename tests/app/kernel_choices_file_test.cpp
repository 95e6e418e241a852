// The machine's record of timed kernel choices (app/kernel_choices_file.h):
// named by the GPU, merged by shape, written whole, and never a reason for a
// run to fail.
#include "app/kernel_choices_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace tidepool::app {
namespace {

const std::string kA = "forward f32 n=32 c=64 h=32 w=32 k=64 r=3 s=3 stride=1x1 pad=1x1 dilation=1x1 groups=1 bias=0";
const std::string kB = "backward-data f32 n=32 c=64 h=32 w=32 k=64 r=3 s=3 stride=1x1 pad=1x1 dilation=1x1 groups=1 bias=0";

TEST(KernelChoicesFile, IsNamedByTheGpuNotTheOrdinal) {
  EXPECT_EQ(kernel_choices_file("cuda:0 (NVIDIA H100 80GB HBM3)", "/c"),
            std::filesystem::path("/c/tidepool/kernel-choices/NVIDIA_H100_80GB_HBM3.txt"));
  EXPECT_EQ(kernel_choices_file("cuda:3 (NVIDIA H100 80GB HBM3)", "/c"),
            kernel_choices_file("cuda:0 (NVIDIA H100 80GB HBM3)", "/c"));
  EXPECT_NE(kernel_choices_file("cuda:0 (NVIDIA A100-SXM4-80GB)", "/c"),
            kernel_choices_file("cuda:0 (NVIDIA H100 80GB HBM3)", "/c"));
}

TEST(KernelChoicesFile, NewChoicesAreAddedAndAShapesNewerChoiceReplacesItsOlder) {
  testing::TempDir dir("kernel-choices");
  const auto file = kernel_choices_file("cuda:0 (GPU X)", dir.path());
  EXPECT_TRUE(read_kernel_choices(file).empty()) << "no file yet";
  remember_kernel_choices(file, {kA + " -> 1 fma"});
  remember_kernel_choices(file, {kB + " -> 0 fma", kA + " -> 6 fma"});
  const std::vector<std::string> lines = read_kernel_choices(file);
  EXPECT_EQ(lines, (std::vector<std::string>{kB + " -> 0 fma", kA + " -> 6 fma"}));
  for (const auto& entry : std::filesystem::directory_iterator(file.parent_path()))
    EXPECT_EQ(entry.path(), file) << "a temporary file was left behind";
}

TEST(KernelChoicesFile, AFileThatCannotBeWrittenOnlyWarns) {
  testing::TempDir dir("kernel-choices-ro");
  // The folder the file would go in is a regular file: nothing can be made.
  std::ofstream(dir.path() / "tidepool") << "in the way";
  const auto file = kernel_choices_file("cuda:0 (GPU X)", dir.path());
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(remember_kernel_choices(file, {kA + " -> 1 fma"}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("could not keep the timed kernel choices"), std::string::npos) << err;
  EXPECT_TRUE(read_kernel_choices(file).empty());
}

}  // namespace
}  // namespace tidepool::app
