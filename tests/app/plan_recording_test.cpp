// Every figure of two whole `plan` tables, against a recording: a change
// that makes the planner faster, or moves a figure's definition, must not
// move a single byte of any row. The tables are planned with a GPU's
// profile, so they are the same on every host (the cpu device's plan
// depends on the host's oneDNN kernels).
//
// Recorded at 30bf4a8 (2026-11-27) with
//   tidepool plan --model resnet18 --dataset cifar10 --batch-size 32 --profile v100 --json
//   tidepool plan --model vgg16 --dataset imagenet --batch-size 64 --profile v100 --json
// A change that means to move figures re-records them with the same
// commands and says why in its commit. Re-recorded when the pytorch
// heuristic was registered: jq showed every earlier row byte-identical and
// in order, and the only new rows pytorch's (20 per table). Re-recorded
// when the peak's breakdown was added: every row with the new keys
// (peak_breakdown, parked_at_peak_bytes, holes_at_peak_bytes) taken out
// is the earlier row, key for key, and the git diff adds lines only.
// Re-recorded when the recompute modes were added: their 56 rows come
// last, every earlier row is byte-identical and in order (the git diff adds
// lines only), and first-fit's pool search, which now grows a pool by what
// its top block lacks, gives the same pools it gave a granule at a time.
// Re-recorded when predictions were made in the plan's pool (waits for
// copies the pool's placements cause, blocks taken back without a copy):
// only predicted_iteration_us and predicted_stall_us moved, on 99 and 60
// rows of modes that offload (all, conv, aconv, accudnn), by up to 17 %
// and 26 %; every other key of every row is as it was.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "testing/run_here.h"

namespace tidepool {
namespace {

nlohmann::json recording(const std::string& name) {
  std::ifstream in(std::string(TIDEPOOL_SOURCE_DIR) + "/tests/app/plan_recordings/" + name);
  EXPECT_TRUE(in) << name;
  return nlohmann::json::parse(in);
}

void expect_table_is_the_recording(const std::string& args, const std::string& name) {
  const testing::CommandResult r = testing::run_here(args + " --json", testing::Captured::stdout_only);
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json planned = nlohmann::json::parse(r.output), recorded = recording(name);
  ASSERT_EQ(planned.size(), recorded.size()) << "rows";
  for (std::size_t i = 0; i < planned.size(); ++i)
    ASSERT_EQ(planned[i], recorded[i]) << "row " << i << "\nplanned:  " << planned[i].dump()
                                       << "\nrecorded: " << recorded[i].dump();
}

TEST(PlanRecording, Resnet18CifarOnAV100IsTheRecordedTable) {
  expect_table_is_the_recording("plan --model resnet18 --dataset cifar10 --batch-size 32 --profile v100",
                                "resnet18-cifar10-b32-v100.json");
}

TEST(PlanRecording, Vgg16ImagenetOnAV100IsTheRecordedTable) {
  expect_table_is_the_recording("plan --model vgg16 --dataset imagenet --batch-size 64 --profile v100",
                                "vgg16-imagenet-b64-v100.json");
}

}  // namespace
}  // namespace tidepool
