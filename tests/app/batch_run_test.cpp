// `--batch` end to end on a tiny CIFAR-10 folder: the run folder, resuming,
// and the checkpoint's guards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "app/batch_run.h"
#include "app/checkpoint.h"
#include "app/recorded_run.h"
#include "engine/run/lr_schedule.h"
#include "testing/metrics_csv.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"

namespace tidepool::app {
namespace {

RunSettings tiny_run(const std::filesystem::path& data, const std::filesystem::path& out) {
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "cifar10";
  o.data_dir = data.string();
  o.batch_size = 32;  // 320 training images: 10 iterations per epoch
  o.out = out.string();
  o.lr = 0.05f;
  o.progress = false;
  return o;
}

nlohmann::json read_json(const std::filesystem::path& f) {
  std::ifstream in(f);
  return nlohmann::json::parse(in);
}

// The largest load a run recorded in its memory_load.csv (iteration, step,
// time_us, load_bytes, extent_bytes): measured by the run's allocator after
// every allocation and free, not predicted by its plan.
std::size_t recorded_peak_load(const std::filesystem::path& run) {
  std::ifstream in(run / "memory_load.csv");
  std::string line;
  std::getline(in, line);  // the header
  std::size_t peak = 0, rows = 0;
  while (std::getline(in, line)) {
    std::size_t start = 0;
    for (int i = 0; i < 3; ++i) start = line.find(',', start) + 1;
    peak = std::max<std::size_t>(peak, std::stoull(line.substr(start, line.find(',', start) - start)));
    ++rows;
  }
  EXPECT_GT(rows, 0u) << "no load was recorded in " << (run / "memory_load.csv");
  return peak;
}

TEST(BatchRun, WritesTheWholeRunFolder) {
  testing::TempDir dir("batch");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings o = tiny_run(dir.path() / "data", dir.path() / "run");
  o.epochs = 2;
  const auto summary = run_batch(o, std::nullopt);
  const auto run = dir.path() / "run";
  for (const char* f : {"metrics.csv", "trace.json", "memory_load.csv", "events.bin", "checkpoint.bin", "summary.json",
                        "timeline.png", "address_map.png", "memory_load.png"})
    EXPECT_TRUE(std::filesystem::exists(run / f)) << f;
  const auto written = read_json(run / "summary.json");
  EXPECT_EQ(written, summary);
  for (const char* key : {"final_test_accuracy", "images_per_second", "peak_load_bytes", "footprint_bytes",
                          "param_checksum", "skipped_images"})
    EXPECT_TRUE(written.contains(key)) << key;
  EXPECT_EQ(written["iterations"], 20);
  EXPECT_EQ(written["status"], "done");
  EXPECT_FALSE(written.contains("divergence"));
  EXPECT_GT(written["peak_load_bytes"].get<std::size_t>(), 0u);
  EXPECT_GE(written["footprint_bytes"].get<std::size_t>(), written["peak_load_bytes"].get<std::size_t>());
  // One metrics row per epoch after the header.
  std::ifstream metrics(run / "metrics.csv");
  int lines = 0;
  for (std::string l; std::getline(metrics, l);) ++lines;
  EXPECT_EQ(lines, 3);
  // The trace opens as JSON and has compute spans.
  const auto trace = read_json(run / "trace.json");
  int spans = 0;
  for (const auto& e : trace["traceEvents"]) spans += e["ph"] == "X";
  EXPECT_GT(spans, 100);
}

TEST(BatchRun, ResumeGivesTheSameParametersAsAnUninterruptedRun) {
  testing::TempDir dir("resume");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings whole = tiny_run(dir.path() / "data", dir.path() / "whole");
  whole.iterations = 14;  // one epoch and four batches: the resume point is mid-epoch
  const auto expected = run_batch(whole, std::nullopt);

  RunSettings first = tiny_run(dir.path() / "data", dir.path() / "halves");
  first.iterations = 14;
  first.stop_after = 7;
  const auto partial = run_batch(first, std::nullopt);
  EXPECT_EQ(partial["iterations"], 7);
  EXPECT_EQ(partial["status"], "stopped") << "--stop-after ends short of the planned run";
  EXPECT_EQ(expected["status"], "done") << "--iterations is the planned run";
  EXPECT_NE(partial["param_checksum"], expected["param_checksum"]);

  const Checkpoint c = load_checkpoint(dir.path() / "halves" / "checkpoint.bin");
  EXPECT_EQ(c.iteration, 7);
  EXPECT_EQ(c.epoch, 0);
  EXPECT_EQ(c.batch_in_epoch, 7);
  RunSettings cli;
  cli.progress = false;
  const RunSettings second = resume_settings(cli, {}, c, (dir.path() / "halves").string());
  const auto resumed = run_batch(second, c);
  EXPECT_EQ(resumed["iterations"], 14);
  EXPECT_EQ(resumed["status"], "done");
  EXPECT_EQ(resumed["param_checksum"], expected["param_checksum"]);
}

int trace_spans(const std::filesystem::path& run) {
  int spans = 0;
  const auto trace = read_json(run / "trace.json");  // a range-for over a temporary's member outlives it
  for (const auto& e : trace["traceEvents"]) spans += e["ph"] == "X";
  return spans;
}

// A run done in three slices, stopped mid-epoch twice (once with periodic
// checkpoints on): each epoch's metrics row is written once, with the whole
// epoch's figures; the traced iterations, done in the first slice, keep
// their files; the parameters are the uninterrupted run's.
TEST(BatchRun, ASlicedRunWritesTheUninterruptedRunsFolder) {
  testing::TempDir dir("slices");
  testing::write_tiny_cifar10(dir.path() / "data", 16, 16);
  RunSettings whole = tiny_run(dir.path() / "data", dir.path() / "whole");
  whole.batch_size = 8;   // 80 training images: 10 iterations per epoch
  whole.iterations = 24;  // epochs of 10, 10 and 4 batches
  whole.trace_iterations = 3;
  const auto expected = run_batch(whole, std::nullopt);

  const auto sliced = dir.path() / "sliced";
  RunSettings first = whole;
  first.out = sliced.string();
  first.stop_after = 7;
  run_batch(first, std::nullopt);
  EXPECT_TRUE(testing::metrics_rows_without_times(sliced).empty()) << "epoch 1 has not ended";
  const int spans = trace_spans(sliced);
  EXPECT_EQ(spans, trace_spans(dir.path() / "whole"));

  RunSettings cli;
  cli.progress = false;
  for (std::int64_t stop_after : {8, 0}) {
    const Checkpoint c = load_checkpoint(sliced / "checkpoint.bin");
    EXPECT_GT(c.epoch_so_far.images, 0) << "stopped mid-epoch";
    cli.stop_after = stop_after;
    cli.checkpoint_every = 2;
    const auto summary = run_batch(resume_settings(cli, {}, c, sliced.string()), c);
    if (stop_after) {
      EXPECT_EQ(summary["iterations"], 15);
      EXPECT_EQ(load_checkpoint(sliced / "checkpoint.bin").iteration, 15);
    } else {
      EXPECT_EQ(summary["param_checksum"], expected["param_checksum"]);
    }
  }
  EXPECT_EQ(testing::metrics_rows_without_times(sliced), testing::metrics_rows_without_times(dir.path() / "whole"));
  EXPECT_EQ(testing::metrics_rows_without_times(sliced).size(), 3u);
  EXPECT_EQ(trace_spans(sliced), spans) << "the resumed slices left the first slice's trace alone";
  EXPECT_NO_THROW(RecordedRun{sliced});
}

// A learning rate of a million drives resnet20 to infinities within an
// epoch: the run stops at the iteration that produced them, writes
// summary.json saying so, keeps no checkpoint or metrics row of garbage,
// and then throws the message the command line prints.
TEST(BatchRun, ADivergedRunWritesItsSummaryAndThrows) {
  testing::TempDir dir("diverge");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings o = tiny_run(dir.path() / "data", dir.path() / "run");
  o.epochs = 2;
  o.lr = 1e6f;
  std::string message;
  try {
    run_batch(o, std::nullopt);
    FAIL() << "a learning rate of 1e6 trained to the end";
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  const auto run = dir.path() / "run";
  const auto summary = read_json(run / "summary.json");
  EXPECT_EQ(summary["status"], "diverged");
  const std::string divergence = summary["divergence"];
  EXPECT_EQ(message.rfind(divergence, 0), 0u) << message;  // the message starts with it
  const std::int64_t at = summary["iterations"];
  EXPECT_GE(at, 1);
  EXPECT_LT(at, 10) << "within the first epoch";
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", learning_rate(o.lr_schedule, o.lr, at - 1, 20));
  EXPECT_EQ(divergence.rfind("training diverged at iteration " + std::to_string(at) + " of 20 (epoch 1, learning rate " +
                                 lr + "): ",
                             0),
            0u)
      << divergence;
  EXPECT_NE(divergence.find("try a lower --lr"), std::string::npos) << divergence;
  EXPECT_FALSE(std::filesystem::exists(run / "checkpoint.bin")) << "no checkpoint of diverged parameters";
  std::ifstream metrics(run / "metrics.csv");
  int lines = 0;
  for (std::string l; std::getline(metrics, l);) ++lines;
  EXPECT_EQ(lines, 1) << "the header only: the epoch did not end";
  // `tidepool view` opens it and says why it ended.
  EXPECT_EQ(RecordedRun(run).status().error, divergence);
}

// --compress: the summary says what compression saved, the run resumes
// compressed, and the parameters are those of the uncompressed run.
TEST(BatchRun, CompressedOffloadsAreReportedResumedAndChangeNoParameter) {
  testing::TempDir dir("compress");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings plain = tiny_run(dir.path() / "data", dir.path() / "plain");
  plain.iterations = 4;
  plain.memory.mode = OffloadMode::conv;
  const auto expected = run_batch(plain, std::nullopt);
  EXPECT_FALSE(expected["compress"].get<bool>());
  EXPECT_EQ(expected["compressed_from_bytes"], 0);

  RunSettings first = plain;
  first.out = (dir.path() / "compressed").string();
  first.memory.compress = true;
  first.stop_after = 2;
  run_batch(first, std::nullopt);
  const Checkpoint c = load_checkpoint(dir.path() / "compressed" / "checkpoint.bin");
  EXPECT_TRUE(c.settings.memory.compress);
  RunSettings cli;
  cli.progress = false;
  const auto summary = run_batch(resume_settings(cli, {}, c, first.out), c);
  EXPECT_TRUE(summary["compress"].get<bool>());
  EXPECT_EQ(summary["param_checksum"], expected["param_checksum"]);
  const auto from = summary["compressed_from_bytes"].get<std::size_t>();
  const auto to = summary["compressed_to_bytes"].get<std::size_t>();
  EXPECT_GT(from, 0u);
  EXPECT_LT(to, from) << "resnet20's conv inputs are ReLU outputs";
  EXPECT_GE(summary["compressed_held_bytes"].get<std::size_t>(), to);
  EXPECT_LT(summary["pinned_host_bytes"].get<std::size_t>(), expected["pinned_host_bytes"].get<std::size_t>());
}

// fp16 with loss scaling: the summary counts the skipped steps and gives the
// final scale, the checkpoint carries the scaler, and a resumed run ends
// with the uninterrupted run's parameters.
TEST(BatchRun, Fp16ResumesItsLossScaleAndReportsSkippedSteps) {
  testing::TempDir dir("fp16");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings whole = tiny_run(dir.path() / "data", dir.path() / "whole");
  whole.iterations = 6;
  whole.memory.precision = Precision::fp16;
  const auto expected = run_batch(whole, std::nullopt);
  EXPECT_EQ(expected["status"], "done");
  ASSERT_TRUE(expected["loss_scale"].is_number());
  const auto skipped = expected["skipped_steps"].get<std::int64_t>();
  EXPECT_LT(skipped, 6) << "some steps train";
  // The scale starts at 2^16 and only halves within 2000 steps.
  EXPECT_EQ(expected["loss_scale"].get<double>(), 65536.0 / static_cast<double>(std::int64_t{1} << skipped));

  RunSettings first = whole;
  first.out = (dir.path() / "halves").string();
  first.stop_after = 3;
  const auto partial = run_batch(first, std::nullopt);
  const Checkpoint c = load_checkpoint(dir.path() / "halves" / "checkpoint.bin");
  EXPECT_EQ(c.loss_scale.scale, partial["loss_scale"].get<float>());
  EXPECT_EQ(c.loss_scale.skipped_steps, partial["skipped_steps"].get<std::int64_t>());
  if (c.loss_scale.skipped_steps == 0) EXPECT_EQ(c.loss_scale.good_steps, 3);
  RunSettings cli;
  cli.progress = false;
  const auto resumed = run_batch(resume_settings(cli, {}, c, first.out), c);
  EXPECT_EQ(resumed["param_checksum"], expected["param_checksum"]);
  EXPECT_EQ(resumed["skipped_steps"], expected["skipped_steps"]);
  EXPECT_EQ(resumed["loss_scale"], expected["loss_scale"]);

  // The resumed run continues the checkpoint's scaler, not a fresh one: one
  // good step short of growing, at 2^10, it grows at its first step.
  Checkpoint grown = c;
  grown.loss_scale = {.scale = 1024.0f, .good_steps = LossScaler::kGrowthInterval - 1, .skipped_steps = 0};
  std::filesystem::copy(first.out, dir.path() / "grown", std::filesystem::copy_options::recursive);
  const auto continued = run_batch(resume_settings(cli, {}, grown, (dir.path() / "grown").string()), grown);
  const auto skips = continued["skipped_steps"].get<std::int64_t>();
  if (skips == 0) EXPECT_EQ(continued["loss_scale"].get<double>(), 2048.0) << "2^10, doubled after its 2000th good step";
}

// --mode autoswap --budget: the summary gives the load limit it chose and
// what it offloads, its pictures draw the limit, and the parameters are
// base's.
TEST(BatchRun, AutoSwapReportsItsLimitAndChangesNoParameter) {
  testing::TempDir dir("autoswap");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings base = tiny_run(dir.path() / "data", dir.path() / "base");
  base.iterations = 2;
  const auto expected = run_batch(base, std::nullopt);
  RunSettings o = base;
  o.out = (dir.path() / "autoswap").string();
  o.memory.mode = OffloadMode::autoswap;
  o.memory.budget_bytes = 45u << 20;  // resnet20 at batch 32: base needs 60, AutoSwap at least 34
  const auto summary = run_batch(o, std::nullopt);
  EXPECT_EQ(summary["param_checksum"], expected["param_checksum"]);
  EXPECT_EQ(summary["pool_bytes"], 45u << 20);
  const auto limit = summary["load_limit_bytes"].get<std::size_t>();
  EXPECT_GT(limit, 0u);
  // What the run's allocator recorded kept under the limit, and is what
  // the plan predicted (the summary's figure is the plan's).
  const std::size_t measured = recorded_peak_load(o.out);
  EXPECT_LE(measured, limit);
  EXPECT_EQ(measured, summary["peak_load_bytes"].get<std::size_t>());
  EXPECT_GT(summary["offloaded_bytes"].get<std::size_t>(), 0u);
  EXPECT_EQ(expected["offloaded_bytes"], 0u);
}

TEST(BatchRun, ResumeRefusesACheckpointOfAnotherModel) {
  Checkpoint c;
  c.settings.model = "resnet32";
  RunSettings cli;
  cli.model = "resnet20";
  try {
    resume_settings(cli, {"model"}, c, "runs/x");
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet32"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(resume_settings(cli, {}, c, "runs/x")) << "a model not given is taken from the checkpoint";
}

// --resume continues with the run's batch norm: --sync-bn cannot be added
// to a run trained without it, and a run trained with it keeps it.
TEST(BatchRun, ResumeRefusesSyncBnForARunTrainedWithout) {
  Checkpoint c;
  RunSettings cli;
  cli.memory.sync_bn = true;
  try {
    resume_settings(cli, {"sync-bn"}, c, "runs/x");
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("--sync-bn true (the run's: false)"), std::string::npos) << e.what();
  }
  c.settings.memory.sync_bn = true;
  EXPECT_TRUE(resume_settings(cli, {"sync-bn"}, c, "runs/x").memory.sync_bn);
  EXPECT_TRUE(resume_settings(RunSettings{}, {}, c, "runs/x").memory.sync_bn) << "left out: the run's own";
}

TEST(BatchRun, TrainingSetSmallerThanABatchIsRefused) {
  testing::TempDir dir("small");
  testing::write_tiny_cifar10(dir.path() / "data", 4, 4);
  RunSettings o = tiny_run(dir.path() / "data", dir.path() / "run");
  EXPECT_THROW(run_batch(o, std::nullopt), std::invalid_argument);
}

TEST(Checkpoint, RoundTripsAndRejectsDamage) {
  testing::TempDir dir("ckpt");
  Checkpoint c;
  c.settings.model = "vgg11";
  c.epoch = 3;
  c.batch_in_epoch = 5;
  c.iteration = 77;
  c.epoch_so_far = {.images = 160, .correct = 41, .loss_sum = 351.0000000000001, .train_seconds = 2.5,
                    .wall_seconds = 3.75, .peak_load_bytes = 1u << 30, .footprint_bytes = (1u << 30) + 5};
  c.loss_scale = {.scale = 1024.0f, .good_steps = 17, .skipped_steps = 3};
  c.state = {1.0f, -2.5f, 3.25f};
  const auto file = dir.path() / "checkpoint.bin";
  save_checkpoint(file, c);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "checkpoint.bin.tmp"));
  const Checkpoint back = load_checkpoint(file);
  EXPECT_EQ(back.settings.model, "vgg11");
  EXPECT_EQ(back.iteration, 77);
  EXPECT_EQ(back.batch_in_epoch, 5);
  EXPECT_EQ(back.state, c.state);
  EXPECT_EQ(back.epoch_so_far.images, 160);
  EXPECT_EQ(back.epoch_so_far.correct, 41);
  EXPECT_EQ(back.epoch_so_far.loss_sum, c.epoch_so_far.loss_sum) << "bit for bit: the resumed epoch's row adds to it";
  EXPECT_EQ(back.epoch_so_far.wall_seconds, 3.75);
  EXPECT_EQ(back.epoch_so_far.footprint_bytes, (1u << 30) + 5);
  EXPECT_EQ(back.loss_scale, c.loss_scale) << "fp16's scale goes on where it was";

  // A torn temporary file a kill left beside it is never read in its place.
  testing::write_text(dir.path() / "checkpoint.bin.tmp", "TIDEPCK1 torn");
  EXPECT_EQ(load_checkpoint(file).iteration, 77);
  save_checkpoint(file, c);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "checkpoint.bin.tmp")) << "the next save replaced it";

  {  // one flipped bit in the state
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x55');
  }
  EXPECT_THROW(load_checkpoint(file), CheckpointError);
  std::filesystem::resize_file(file, 12);
  EXPECT_THROW(load_checkpoint(file), CheckpointError);
  EXPECT_THROW(load_checkpoint(dir.path() / "missing.bin"), CheckpointError);
}

TEST(LearningRate, SchedulesFollowTheirDefinitions) {
  EXPECT_FLOAT_EQ(learning_rate(LrSchedule::constant, 0.1f, 50, 100), 0.1f);
  EXPECT_FLOAT_EQ(learning_rate(LrSchedule::step, 0.1f, 49, 100), 0.1f);
  EXPECT_FLOAT_EQ(learning_rate(LrSchedule::step, 0.1f, 50, 100), 0.01f);
  EXPECT_FLOAT_EQ(learning_rate(LrSchedule::step, 0.1f, 80, 100), 0.001f);
  EXPECT_FLOAT_EQ(learning_rate(LrSchedule::cosine, 0.1f, 0, 100), 0.1f);
  EXPECT_NEAR(learning_rate(LrSchedule::cosine, 0.1f, 50, 100), 0.05f, 1e-6);
  EXPECT_NEAR(learning_rate(LrSchedule::cosine, 0.1f, 100, 100), 0.0f, 1e-7);
  EXPECT_THROW(parse_choice<LrSchedule>("linear", "learning-rate schedule"), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool::app
