// The window's "record the next K iterations" (app/capture_recorder.h): a
// saved session records later iterations into RUN/captures/<first>-<last>/,
// a folder every run reader takes, with what --trace-from would have
// recorded; nothing is overwritten, and a session without a run folder is
// told why it cannot.
#include "app/capture_recorder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "app/batch_run.h"
#include "app/recorded_run.h"
#include "app/run_record.h"
#include "app/session_runner.h"
#include "testing/run_here.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"
#include "ui/scene/iteration_number.h"
#include "ui/scene/timeline.h"
#include "ui/png/run_pictures.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

RunSettings tiny(const fs::path& data) {
  RunSettings o;
  o.model = "resnet20";
  o.dataset = "cifar10";
  o.data_dir = data.string();
  o.batch_size = 32;
  o.lr = 0.05f;
  o.iterations = 8;
  o.trace_iterations = 2;
  o.progress = false;
  return o;
}

nlohmann::json read_summary(const fs::path& folder) {
  std::ifstream in(folder / "summary.json");
  return nlohmann::json::parse(in);
}

// Polls the runner's status until `done` says so: the status is published
// a moment after an iteration counts as trained (wait_for_iterations), once
// it is added up and its capture, if any, announced.
template <class Done>
void wait_for_status(const SessionRunner& runner, Done done) {
  while (!done(runner.status())) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Steps a paused runner from iteration `from` by `n` and waits for them.
void step(SessionRunner& runner, std::int64_t from, int n) {
  for (int i = 0; i < n; ++i) runner.step();
  runner.wait_for_iterations(from + n);
  wait_for_status(runner, [&](const ui::SessionStatus& s) {
    return s.iteration >= from + n || s.state == ui::RunState::failed;
  });
  ASSERT_EQ(runner.status().iteration, from + n) << runner.status().error;
}

TEST(WindowCapture, TheNextIterationsAreRecordedAsTraceFromWouldHaveAndEveryRunReaderTakesThem) {
  testing::TempDir dir("capture");
  testing::write_tiny_cifar10(dir.path() / "data");
  RunSettings settings = tiny(dir.path() / "data");
  settings.out = (dir.path() / "window").string();
  const fs::path capture = fs::path(settings.out) / "captures" / "5-6";
  {
    SessionRunner runner(settings);
    runner.record_to(std::make_unique<RunRecord>(settings, nullptr));
    runner.start(/*paused=*/true);
    step(runner, 0, 4);
    EXPECT_TRUE(runner.status().can_capture);
    runner.record_next(2);
    step(runner, 4, 2);
    wait_for_status(runner, [](const ui::SessionStatus& s) { return s.capture.rfind("recorded", 0) == 0; });
    EXPECT_EQ(runner.status().capture, "recorded in " + capture.string() + ": `tidepool view " + capture.string() +
                                           "` shows it");
    runner.record_next(2);  // iterations 7-8
    step(runner, 6, 1);
    runner.stop();  // the window closed inside the second capture: it keeps what it recorded
  }
  for (const char* file : {"events.bin", "trace.json", "memory_load.csv", "summary.json", "timeline.png",
                           "address_map.png", "memory_load.png"})
    EXPECT_TRUE(fs::exists(capture / file)) << file;
  const nlohmann::json summary = read_summary(capture);
  EXPECT_EQ(summary.at("status"), "captured");
  EXPECT_EQ(summary.at("capture").at("first_iteration"), 5);
  EXPECT_EQ(summary.at("capture").at("last_iteration"), 6);
  EXPECT_EQ(summary.at("capture").at("run"), settings.out);
  EXPECT_EQ(read_summary(fs::path(settings.out) / "captures" / "7-8").at("capture").at("last_iteration"), 7)
      << "the run stopped after iteration 7";

  // What `tidepool view` shows of it: those two iterations, with the blocks
  // placed before them, titled with their numbers.
  const RingSnapshot events = RecordedRun(capture).events(0);
  ASSERT_EQ(events.iterations.size(), 2u);
  EXPECT_EQ(events.iterations[0].iteration, 4);
  EXPECT_EQ(events.iterations[1].iteration, 5);
  EXPECT_FALSE(events.placement.empty()) << "the parameters, placed before the first iteration";
  const ui::TimelineScene timeline = ui::build_timeline(events, ui::kRunPictureIterations);
  ASSERT_EQ(timeline.iterations.size(), 2u);
  EXPECT_EQ(ui::iterations_text(timeline.iterations.front().iteration, timeline.iterations.back().iteration),
            "iterations 5-6");

  // A --batch run with --trace-from 4 records the same placements.
  RunSettings batch = tiny(dir.path() / "data");
  batch.trace_from = 4;
  batch.out = (dir.path() / "batch").string();
  run_batch(batch, std::nullopt);
  const RingSnapshot traced = RecordedRun(batch.out).events(0);
  auto places = [](const std::vector<AllocEvent>& allocs) {
    std::vector<std::tuple<std::int64_t, int, std::string, std::size_t, std::size_t, bool>> out;
    for (const AllocEvent& a : allocs) out.emplace_back(a.iteration, a.step, a.name, a.offset, a.bytes, a.is_free());
    return out;
  };
  EXPECT_EQ(places(events.placement), places(traced.placement));
  EXPECT_EQ(places(events.allocs), places(traced.allocs));

  // Every reader of a run folder takes it.
  for (const std::string& command : {"replay " + capture.string(), "diff " + batch.out + " " + capture.string(),
                                     "export " + capture.string() + " --pytorch-snapshot " +
                                         (dir.path() / "capture.pickle").string()}) {
    const auto r = testing::run_here(command, testing::Captured::stdout_only);
    EXPECT_EQ(r.status, 0) << command << "\n" << r.output;
  }
}

TEST(WindowCapture, ASessionWithoutARunFolderIsToldWhyItCannotRecord) {
  testing::TempDir dir("capture");
  testing::write_tiny_cifar10(dir.path() / "data");
  SessionRunner runner(tiny(dir.path() / "data"));
  runner.start(/*paused=*/true);
  step(runner, 0, 1);
  EXPECT_FALSE(runner.status().can_capture);
  runner.record_next(2);
  step(runner, 1, 1);
  EXPECT_NE(runner.status().capture.find("refused: recording iterations needs a run folder"), std::string::npos)
      << runner.status().capture;
  EXPECT_NE(runner.status().capture.find("--out DIR"), std::string::npos);
  runner.stop();
}

TEST(CaptureRecorder, OneAtATimeAndAFolderThatExistsIsNeverWritten) {
  testing::TempDir dir("capture");
  CaptureRecorder recorder(dir.path());
  fs::create_directories(capture_folder(dir.path(), 9, 2));
  std::ofstream(capture_folder(dir.path(), 9, 2) / "notes.txt") << "mine";
  try {
    recorder.start(9, 2);
    FAIL() << "an existing capture folder was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("captures/10-11 exists already"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(capture_folder(dir.path(), 9, 2)), fs::directory_iterator()), 1);
  EXPECT_FALSE(recorder.recording());

  EXPECT_EQ(recorder.start(3, 1), dir.path() / "captures" / "4-4");
  try {
    recorder.start(5, 2);
    FAIL() << "a second capture began while one was recording";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("iterations 4-4 are being recorded"), std::string::npos) << e.what();
  }
  EXPECT_THROW(CaptureRecorder(dir.path()).start(5, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool::app
