// `--device cuda` on any machine: where the backend is not built, or the
// machine has no GPU, a clear message and exit status 1, never an abort;
// where there is a GPU, training runs. The test knows which case it is in
// and checks that case, so it runs (not skips) everywhere.
#include "app/device_factory.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"
#ifdef TIDEPOOL_HAVE_CUDA
#include "engine/device/cuda/cuda_device.h"
#endif

namespace tidepool {
namespace {

using Result = testing::CommandResult;

Result run(const std::string& args) { return testing::run_command(std::string(TIDEPOOL_BINARY) + " " + args); }

// What `--device cuda` must say here, or "" where a GPU is usable.
std::string expected_cuda_refusal() {
  if (!app::cuda_backend_built()) return "this build has no CUDA backend";
#ifdef TIDEPOOL_HAVE_CUDA
  if (cuda_device_count() == 0) return "no CUDA device is available: ";
#endif
  return "";
}

TEST(DeviceFactory, CudaWithoutABackendOrAGpuIsRefusedInWords) {
  const std::string refusal = expected_cuda_refusal();
  if (refusal.empty()) {
    EXPECT_NE(app::make_device(DeviceKind::cuda, 0), nullptr);
    return;
  }
  try {
    app::make_device(DeviceKind::cuda, 0);
    FAIL() << "a cuda device was made on a machine that cannot have one";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(refusal), std::string::npos) << e.what();
  }
}

TEST(DeviceFactory, LinkBandwidthIsForTheCpuDeviceOnly) {
  // Refused before any GPU is looked for, so the message is the same on
  // every machine whose build has the backend.
  try {
    app::make_device(DeviceKind::cuda, 12.5);
    FAIL() << "--link-gbps was accepted for the cuda device";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("--link-gbps") != std::string::npos ||
                what.find("no CUDA backend") != std::string::npos)
        << what;
  }
  const auto cpu = app::make_device(DeviceKind::cpu, 12.5);
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->caps().simulated_link) << "the link is a capability the device reports";
  EXPECT_NO_THROW(cpu->set_link_gbps(3));
  EXPECT_THROW(parse_choice<DeviceKind>("tpu", "device"), std::invalid_argument);
}

TEST(DeviceFactory, CommandLineWithDeviceCudaExitsWithTheReasonOrTrains) {
  testing::TempDir dir("device_cuda");
  testing::write_tiny_cifar10(dir.path() / "data");
  const Result r =
      run("--batch --quiet --device cuda --dataset cifar10 --batch-size 32 --iterations 1 --data " +
          (dir.path() / "data").string() + " --out " + (dir.path() / "run").string());
  const std::string refusal = expected_cuda_refusal();
  if (refusal.empty()) {
    EXPECT_EQ(r.status, 0) << r.output;
    return;
  }
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error: " + refusal), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tidepool
