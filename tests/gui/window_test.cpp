// The window, for real: `tidepool --screenshot` under xvfb-run trains a tiny
// run, renders frames with live data and writes a PNG; the tests crop each
// view out of it (ui/layout.h gives where) and check that it drew what it
// should, by the palette's colours (ui/scene/colours.h). `tidepool view`
// does the same with a --batch run folder's recorded iterations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <opencv2/imgcodecs.hpp>

#include "testing/examples.h"
#include "testing/mpirun.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "testing/tiny_datasets.h"
#include "ui/layout.h"
#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

using Result = testing::CommandResult;
using testing::run_command;

bool have_xvfb() { return std::system("command -v xvfb-run > /dev/null 2>&1") == 0; }

// ImGui's main menu bar with the default font: 13 px text plus padding.
constexpr float kMenuHeight = 19;

// Pixels of `rgb` (within a small tolerance for blending) inside the view's
// rectangle, less its title bar and borders.
int count_colour(const cv::Mat& image, const Rect& view, std::uint32_t rgb) {
  const int r = (rgb >> 16) & 0xFF, g = (rgb >> 8) & 0xFF, b = rgb & 0xFF;
  int n = 0;
  for (int y = static_cast<int>(view.y) + 24; y < static_cast<int>(view.y + view.h) - 4; ++y)
    for (int x = static_cast<int>(view.x) + 4; x < static_cast<int>(view.x + view.w) - 4; ++x) {
      const cv::Vec3b p = image.at<cv::Vec3b>(y, x);  // BGR
      if (std::abs(p[2] - r) <= 4 && std::abs(p[1] - g) <= 4 && std::abs(p[0] - b) <= 4) ++n;
    }
  return n;
}

// Text: ImGui draws it white on dark backgrounds.
int count_bright(const cv::Mat& image, const Rect& view) {
  int n = 0;
  for (int y = static_cast<int>(view.y) + 24; y < static_cast<int>(view.y + view.h) - 4; ++y)
    for (int x = static_cast<int>(view.x) + 4; x < static_cast<int>(view.x + view.w) - 4; ++x) {
      const cv::Vec3b p = image.at<cv::Vec3b>(y, x);
      if (p[0] > 200 && p[1] > 200 && p[2] > 200) ++n;
    }
  return n;
}

// The lower part of a view, below its title line and legend: the plot.
Rect lower_half(const Rect& view) { return {view.x, view.y + view.h / 2, view.w, view.h / 2}; }

// A parked block's fill (ui/paint/address_map_picture.cpp): its role's
// colour at 40%.
std::uint32_t parked_fill(Role r) {
  const std::uint32_t rgb = role_colour(r);
  auto channel = [&](int shift) { return static_cast<std::uint32_t>(std::lround(((rgb >> shift) & 0xFF) * 0.4)) << shift; };
  return channel(16) | channel(8) | channel(0);
}

class Window : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (scripts/install-deps.sh installs it)";
    testing::write_tiny_cifar10(dir_.path() / "data");
  }
  std::string tiny_run() const {
    return std::string(TIDEPOOL_BINARY) + " --model resnet20 --dataset cifar10 --data " +
           (dir_.path() / "data").string() + " --batch-size 32 --epochs 3";
  }
  testing::TempDir dir_{"window"};
};

TEST_F(Window, ScreenshotShowsEveryViewWithLiveData) {
  const std::string shot = (dir_.path() / "shot.png").string();
  // A pool with room, so freed blocks park on every processor (in the least
  // pool whether any park depends on oneDNN's workspaces: none on AVX-512).
  const Result r =
      run_command("xvfb-run -a " + tiny_run() + " --mode all --budget 32MiB --screenshot " + shot + " --frames 20");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("screenshot"), std::string::npos) << r.output;
  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << "no PNG at " << shot;
  EXPECT_GE(image.cols, 1280);
  EXPECT_GE(image.rows, 720);
  const Layout l = layout_for(static_cast<float>(image.cols), static_cast<float>(image.rows), kMenuHeight);

  // Timeline: forward and backward spans on the compute lane, transfers on
  // theirs (mode all offloads every layer's input).
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::forward)), 200);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::backward)), 200);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::offload)) +
                count_colour(image, l[ViewId::timeline], span_colour(SpanKind::prefetch)),
            50);
  // Address map: tensors by role, the parameters placed once among them.
  EXPECT_GT(count_colour(image, l[ViewId::address_map], role_colour(Role::activation)), 1000);
  EXPECT_GT(count_colour(image, l[ViewId::address_map], role_colour(Role::weight)) +
                count_colour(image, l[ViewId::address_map], role_colour(Role::optimizer_state)),
            100);
  // In its plot, the contents of offloaded activations in flight to the
  // host, and blocks parked while their copies run (async transfers).
  EXPECT_GT(count_colour(image, lower_half(l[ViewId::address_map]), kInFlightToHost), 200);
  EXPECT_GT(count_colour(image, lower_half(l[ViewId::address_map]), parked_fill(Role::activation)), 50);
  // Memory load: the load curve and the budget line.
  EXPECT_GT(count_colour(image, l[ViewId::memory_load], kLoad), 100);
  EXPECT_GT(count_colour(image, l[ViewId::memory_load], kBudget), 100);
  // Controls and stats: text.
  EXPECT_GT(count_bright(image, l[ViewId::controls]), 1000);
  EXPECT_GT(count_bright(image, l[ViewId::stats]), 1000);
}

// A live session saved (--out without --batch): when the window closes the
// folder holds a stopped run, which `tidepool view` opens and `--batch
// --resume` finishes.
TEST_F(Window, OutSavesTheSessionForViewAndResume) {
  const std::filesystem::path run = dir_.path() / "saved";
  const std::string session = std::string(TIDEPOOL_BINARY) + " --model resnet20 --dataset cifar10 --data " +
                              (dir_.path() / "data").string() + " --batch-size 32 --iterations 40 --trace-iterations 2";
  const Result r = run_command("xvfb-run -a " + session + " --out " + run.string() + " --screenshot " +
                               (dir_.path() / "live.png").string() + " --frames 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("saved the run in " + run.string() + ": "), std::string::npos) << r.output;
  for (const char* file : {"events.bin", "summary.json", "checkpoint.bin", "metrics.csv", "trace.json"})
    EXPECT_TRUE(std::filesystem::exists(run / file)) << file << "\n" << r.output;
  const Result viewed = run_command("xvfb-run -a " + std::string(TIDEPOOL_BINARY) + " view " + run.string() +
                                    " --screenshot " + (dir_.path() / "view.png").string() + " --frames 2");
  EXPECT_EQ(viewed.status, 0) << viewed.output;
  // Saved again into the same folder: refused before a window opens.
  const Result again = run_command(session + " --out " + run.string());
  EXPECT_EQ(again.status, 1) << again.output;
  EXPECT_NE(again.output.find("holds a run"), std::string::npos) << again.output;
  const Result resumed = run_command(std::string(TIDEPOOL_BINARY) + " --batch --quiet --resume " + run.string());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  std::ifstream in(run / "summary.json");
  const std::string summary((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(summary.find("\"done\""), std::string::npos) << summary;
}

// Under mpirun rank 0 opens the window and the other ranks train in step
// with it: shown rank 1's events (forwarded a few times a second), the
// views draw its iterations, its all-reduces on the comm lane.
TEST_F(Window, UnderMpirunTheViewsShowAnotherRanksEvents) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun on this machine";
  const std::string shot = (dir_.path() / "rank1.png").string();
  const Result r = run_command("xvfb-run -a " + testing::mpirun(2) + tiny_run() +
                               " --show-rank 1 --screenshot " + shot + " --frames 10");
  if (r.output.find("built without MPI") != std::string::npos) GTEST_SKIP() << "this build has no MPI";
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("stats | rank shown | 1 of 2, batch 16 each"), std::string::npos) << r.output;
  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << "no PNG at " << shot;
  const Layout l = layout_for(static_cast<float>(image.cols), static_cast<float>(image.rows), kMenuHeight);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::forward)), 200);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::all_reduce)), 200) << "the comm lane";
  EXPECT_GT(count_colour(image, l[ViewId::address_map], role_colour(Role::activation)), 1000);
  EXPECT_GT(count_colour(image, l[ViewId::memory_load], kLoad), 100);
}

TEST_F(Window, FragmentationScenarioDrawsEveryHeuristicsPool) {
  const std::string shot = (dir_.path() / "fragmentation.png").string();
  const Result r = run_command("xvfb-run -a " + tiny_run() + " --fragmentation-scenario --screenshot " + shot + " --frames 5");
  ASSERT_EQ(r.status, 0) << r.output;
  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty());
  // The scenario window covers the middle of the screen; before the first
  // event every pool is an empty column (the hole colour) with its outline.
  const Rect middle{image.cols * 0.15f, image.rows * 0.12f, image.cols * 0.7f, image.rows * 0.75f};
  const int empty = count_colour(image, middle, kHole);
  EXPECT_GT(empty, 20000);

  // --scenario-step opens it with events played: after the first sequence's
  // A1(5), A2(2) and A3(1) every 11-unit pool holds 8 units of blocks.
  const std::string played = (dir_.path() / "fragmentation-played.png").string();
  const Result p = run_command("xvfb-run -a " + tiny_run() + " --fragmentation-scenario --scenario-step 3 --screenshot " +
                               played + " --frames 5");
  ASSERT_EQ(p.status, 0) << p.output;
  const cv::Mat after = cv::imread(played, cv::IMREAD_COLOR);
  ASSERT_FALSE(after.empty());
  EXPECT_LT(count_colour(after, middle, kHole), empty / 2) << "the pools after three events hold blocks";
}

// Xvfb leaves its pointer mid-screen, over the views: a screenshot moves it
// off the window unless --hover puts it somewhere, here over the memory
// load's curves, where the sample under it gets a tooltip.
TEST_F(Window, AScreenshotShowsATooltipOnlyWhereHoverPutsThePointer) {
  const std::string shot = (dir_.path() / "hover.png").string();
  const Result plain = run_command("xvfb-run -a " + tiny_run() + " --screenshot " + shot + " --frames 3");
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("tooltips on show: 0 (the pointer off the window)"), std::string::npos) << plain.output;
  const Layout l = layout_for(1600, 900, kMenuHeight);
  const Rect load = l[ViewId::memory_load];
  const int x = static_cast<int>(load.x + 0.6f * load.w), y = static_cast<int>(load.y + 0.38f * load.h);
  const std::string at = std::to_string(x) + "," + std::to_string(y);
  const Result hovered = run_command("xvfb-run -a " + tiny_run() + " --screenshot " + shot + " --frames 3 --hover " + at);
  ASSERT_EQ(hovered.status, 0) << hovered.output;
  EXPECT_NE(hovered.output.find("tooltips on show: 1 (the pointer at " + at + ")"), std::string::npos)
      << hovered.output;
  const Result alone = run_command(tiny_run() + " --hover 10,10");
  EXPECT_NE(alone.status, 0);
  EXPECT_NE(alone.output.find("--screenshot"), std::string::npos) << "--hover needs --screenshot: " << alone.output;
}

// A click on a block of the address map pins it: its details stay on
// show (and the screenshot prints them).
TEST_F(Window, AClickedBlockIsPinnedWithItsDetails) {
  const std::string shot = (dir_.path() / "pinned.png").string();
  const Layout l = layout_for(1600, 900, kMenuHeight);
  const Rect map = l[ViewId::address_map];
  const std::string at = std::to_string(static_cast<int>(map.x + 0.4f * map.w)) + "," +
                         std::to_string(static_cast<int>(map.y + 0.85f * map.h));
  const Result r = run_command("xvfb-run -a " + tiny_run() + " --screenshot " + shot + " --frames 3 --click " + at);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("address map pinned | lifetime"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("address map pinned | size"), std::string::npos) << r.output;
}

TEST_F(Window, AScenarioStepWithoutTheScenarioIsRefused) {
  const Result r = run_command(tiny_run() + " --scenario-step 3");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--fragmentation-scenario"), std::string::npos) << r.output;
}

// --overlap-scenario trains vDNN++'s constructed network with synchronous
// transfers on a throttled link: the compute lane records stalls, and the
// timeline shows the copies. The screenshot waits for an iteration trained
// with the link the scenario sets from the first one, and the stalls are
// checked on what it recorded, not on pixels: how wide a stall is drawn
// depends on how busy the machine was.
TEST_F(Window, OverlapScenarioShowsComputeStalls) {
  const std::string shot = (dir_.path() / "overlap.png").string();
  const Result r = run_command("xvfb-run -a " + tiny_run() + " --overlap-scenario --screenshot " + shot + " --frames 10");
  ASSERT_EQ(r.status, 0) << r.output;
  long long iteration = -1;
  double iteration_ms = 0, stall_ms = 0;
  const auto on_show = r.output.find("on show: iteration");
  ASSERT_NE(on_show, std::string::npos) << r.output;
  ASSERT_EQ(std::sscanf(r.output.c_str() + on_show, "on show: iteration %lld, %lf ms, the compute stream stalled %lf ms",
                        &iteration, &iteration_ms, &stall_ms),
            3)
      << r.output;
  EXPECT_GE(iteration, 2) << "an iteration with the link the scenario set (the second or later, counted from 1)";
  EXPECT_GT(stall_ms, 0.0) << "synchronous transfers: every layer waits for its copies";
  EXPECT_LT(stall_ms, iteration_ms);
  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty());
  const Layout l = layout_for(static_cast<float>(image.cols), static_cast<float>(image.rows), kMenuHeight);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::offload)), 50);
}

// The Stats view's value for `figure` as the screenshot printed it
// ("stats | figure | value"), or "" when it printed none.
std::string stats_value(const std::string& output, const std::string& figure) {
  const std::string key = "stats | " + figure + " | ";
  const auto at = output.find(key);
  if (at == std::string::npos) return "";
  const auto from = at + key.size();
  return output.substr(from, output.find('\n', from) - from);
}

// The sim device at ImageNet's shapes, no files: the views draw its
// iterations, and the Stats view says "simulated: no numbers" for the test
// accuracy, puts the plan's prediction beside the simulated times, and
// draws the planned peak's stacked bar in the roles' colours.
TEST_F(Window, SimDeviceSaysNoNumbersAndShowsThePrediction) {
  const std::string shot = (dir_.path() / "sim.png").string();
  const Result r = run_command("xvfb-run -a " + std::string(TIDEPOOL_BINARY) +
                               " --device sim --profile m40 --model resnet18 --dataset imagenet-shapes --batch-size 8"
                               " --mode all --screenshot " + shot + " --frames 5");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(stats_value(r.output, "test accuracy"), "simulated: no numbers") << r.output;
  const std::string time = stats_value(r.output, "iteration time");
  EXPECT_NE(time.find(" ms simulated | "), std::string::npos) << r.output;
  EXPECT_NE(time.find(" ms predicted"), std::string::npos) << r.output;
  EXPECT_NE(stats_value(r.output, "stall time").find(" ms predicted"), std::string::npos) << r.output;
  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << "no PNG at " << shot;
  const Layout l = layout_for(static_cast<float>(image.cols), static_cast<float>(image.rows), kMenuHeight);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::forward)), 200);
  EXPECT_GT(count_colour(image, l[ViewId::memory_load], kLoad), 100);
  // Weights live all along, so they are in every peak; their green is
  // drawn nowhere else in Stats (the bar and its legend's swatch).
  EXPECT_NE(stats_value(r.output, "planned peak load by role").find("weight "), std::string::npos) << r.output;
  EXPECT_GT(count_colour(image, l[ViewId::stats], role_colour(Role::weight)), 100);
}

// A run that cannot start (here a budget below the smallest) has nothing to
// show: --screenshot says why at once instead of waiting for data.
TEST_F(Window, ARunThatCannotStartEndsTheScreenshotWithItsReason) {
  const Result r = run_command("xvfb-run -a " + tiny_run() + " --mode autoswap --budget 1MiB --screenshot " +
                               (dir_.path() / "never.png").string() + " --frames 5");
  // tidepool exits 1; xvfb-run, whose server is torn down a moment after
  // it started, sometimes reports a cleanup problem as 5 instead.
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("the smallest budget that works is"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "never.png"));
  // It ended on the run's failure, not on waiting for data until the window
  // gave up (ui/window.cpp says which way it ended; no clock is read here).
  EXPECT_EQ(r.output.find("no iteration reached the views"), std::string::npos) << r.output;
}

// `tidepool view`: a finished --batch run folder in the window, read only.
class View : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_tiny_cifar10(dir_.path() / "data"); }
  // A tiny --batch run (two iterations, every layer's input offloaded
  // unless `mode` says otherwise): its folder, with events.bin.
  std::filesystem::path batch_run(const std::string& name = "run", const std::string& mode = "all") const {
    const std::filesystem::path run = dir_.path() / name;
    const Result r = run_command(std::string(TIDEPOOL_BINARY) + " --batch --quiet --model resnet20 --dataset cifar10 --data " +
                                 (dir_.path() / "data").string() + " --batch-size 8 --iterations 2 --mode " + mode +
                                 " --out " + run.string());
    EXPECT_EQ(r.status, 0) << r.output;
    return run;
  }
  static std::string view(const std::filesystem::path& folder) {
    return std::string(TIDEPOOL_BINARY) + " view " + folder.string();
  }
  testing::TempDir dir_{"view"};
};

TEST_F(View, ScreenshotShowsTheRecordedIterationsInEveryView) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (scripts/install-deps.sh installs it)";
  const std::filesystem::path run = batch_run();
  const std::string shot = (dir_.path() / "view.png").string();
  const Result r = run_command("xvfb-run -a " + view(run) + " --screenshot " + shot + " --frames 5");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("screenshot"), std::string::npos) << r.output;
  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << "no PNG at " << shot;
  const Layout l = layout_for(static_cast<float>(image.cols), static_cast<float>(image.rows), kMenuHeight);

  // What the live window shows of a run, from the file: the recorded
  // iterations' spans and transfers, their tensors in the pool over the
  // parameters placed at set-up, the load curve under the plan's pool.
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::forward)), 200);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::backward)), 200);
  EXPECT_GT(count_colour(image, l[ViewId::timeline], span_colour(SpanKind::offload)) +
                count_colour(image, l[ViewId::timeline], span_colour(SpanKind::prefetch)),
            50);
  EXPECT_GT(count_colour(image, l[ViewId::address_map], role_colour(Role::activation)), 1000);
  EXPECT_GT(count_colour(image, l[ViewId::address_map], role_colour(Role::weight)) +
                count_colour(image, l[ViewId::address_map], role_colour(Role::optimizer_state)),
            100);
  EXPECT_GT(count_colour(image, l[ViewId::memory_load], kLoad), 100);
  EXPECT_GT(count_colour(image, l[ViewId::memory_load], kBudget), 100);
  // Controls (what the run was trained with) and stats: text.
  EXPECT_GT(count_bright(image, l[ViewId::controls]), 1000);
  EXPECT_GT(count_bright(image, l[ViewId::stats]), 1000);
}

// `tidepool view A B`: a base run above an `all` run of the same network,
// every view of each under its name, on the same axes (what the
// screenshot prints of each: "run | A: ...", "axes | ..."); base keeps
// every activation, so its map is the taller and sets the bytes axis.
TEST_F(View, TwoRunsAreComparedOnTheSameAxes) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (scripts/install-deps.sh installs it)";
  const std::filesystem::path base = batch_run("base", "base"), all = batch_run("all", "all");
  const std::string shot = (dir_.path() / "compare.png").string();
  const Result r = run_command("xvfb-run -a " + view(base) + " " + all.string() + " --screenshot " + shot + " --frames 3");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::size_t a = r.output.find("run | A: " + base.string()), b = r.output.find("run | B: " + all.string());
  ASSERT_NE(a, std::string::npos) << r.output;
  ASSERT_NE(b, std::string::npos) << r.output;
  ASSERT_LT(a, b);
  const std::string first = r.output.substr(a, b - a), second = r.output.substr(b);
  auto axes = [](const std::string& words) {
    const std::size_t at = words.find("axes | ");
    return at == std::string::npos ? std::string() : words.substr(at, words.find('\n', at) - at);
  };
  EXPECT_NE(axes(first), "") << r.output;
  EXPECT_EQ(axes(first), axes(second)) << r.output;
  // Each run's own figures under its name: base offloads nothing.
  EXPECT_EQ(stats_value(first, "offloaded / prefetched"), "0 B / 0 B") << first;
  EXPECT_NE(stats_value(second, "offloaded / prefetched"), "0 B / 0 B") << second;
  EXPECT_NE(stats_value(first, "planned peak load"), stats_value(second, "planned peak load")) << r.output;
  EXPECT_NE(first.find("address map | iteration "), std::string::npos) << first;
  EXPECT_NE(second.find("address map | iteration "), std::string::npos) << second;

  // Both maps drawn, one in each half of the window.
  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << "no PNG at " << shot;
  const float band = (static_cast<float>(image.rows) - kMenuHeight) / 2;
  const Layout top = layout_in({0, kMenuHeight, static_cast<float>(image.cols), band});
  const Layout bottom = layout_in({0, kMenuHeight + band, static_cast<float>(image.cols), band});
  EXPECT_GT(count_colour(image, top[ViewId::address_map], role_colour(Role::activation)), 300);
  EXPECT_GT(count_colour(image, bottom[ViewId::address_map], role_colour(Role::activation)), 300);
  EXPECT_GT(count_colour(image, top[ViewId::timeline], span_colour(SpanKind::forward)), 50);
  EXPECT_GT(count_colour(image, bottom[ViewId::timeline], span_colour(SpanKind::offload)) +
                count_colour(image, bottom[ViewId::timeline], span_colour(SpanKind::prefetch)),
            10);
}

// A second path that is no run is refused as the first would be, before
// any window opens.
TEST_F(View, ComparingWithAFolderThatIsNotARunIsRefused) {
  const std::filesystem::path run = batch_run(), data = dir_.path() / "data";
  const Result r = run_command(view(run) + " " + data.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error: " + data.string() + " is not a Tidepool run folder"), std::string::npos)
      << r.output;
}

// A sim run's folder: its losses were zeros, and the Stats view says so;
// summary.json keeps no prediction, so the times stand alone.
TEST_F(View, ASimRunSaysNoNumbers) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (scripts/install-deps.sh installs it)";
  const std::filesystem::path run = dir_.path() / "sim-run";
  const Result trained = run_command(std::string(TIDEPOOL_BINARY) +
                                     " --batch --quiet --device sim --profile m40 --model resnet20 --dataset cifar10"
                                     " --data " + (dir_.path() / "data").string() +
                                     " --batch-size 8 --iterations 2 --mode all --out " + run.string());
  ASSERT_EQ(trained.status, 0) << trained.output;
  const Result r = run_command("xvfb-run -a " + view(run) + " --screenshot " + (dir_.path() / "sim-view.png").string() +
                               " --frames 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(stats_value(r.output, "test accuracy"), "simulated: no numbers") << r.output;
  const std::string time = stats_value(r.output, "iteration time");
  EXPECT_NE(time.find(" ms"), std::string::npos) << r.output;
  EXPECT_EQ(time.find("predicted"), std::string::npos) << r.output;
}

// Refused before any window opens, so no display is needed.
TEST_F(View, AFolderThatIsNotARunIsRefused) {
  const std::filesystem::path data = dir_.path() / "data";
  const Result r = run_command(view(data));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error: " + data.string() +
                          " is not a Tidepool run folder: no events.bin (runs written by --batch have one)"),
            std::string::npos)
      << r.output;
}

TEST_F(View, ATruncatedEventsFileIsRefused) {
  const std::filesystem::path run = batch_run();
  const std::filesystem::path events = run / "events.bin";
  std::filesystem::resize_file(events, std::filesystem::file_size(events) * 2 / 3);
  const Result r = run_command(view(run));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error: " + events.string() + " is truncated"), std::string::npos) << r.output;
}

// `tidepool view snap.pickle`: a PyTorch snapshot's trace placed by the
// pytorch heuristic, its blocks named by the frames that allocated them.
// What the address map holds is read from the words the screenshot prints
// ("address map name | LABEL | N blocks"); the pixels only confirm that the
// map and the load curve were drawn.
TEST_F(View, ASnapshotShowsTheAddressMapWithFrameLabels) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (scripts/install-deps.sh installs it)";
  const std::string shot = (dir_.path() / "snapshot.png").string();
  const Result r = run_command("xvfb-run -a " + view(testing::example_path("resnet_snapshot.pickle")) +
                               " --screenshot " + shot + " --frames 3");
  ASSERT_EQ(r.status, 0) << r.output;
  // The example's activations, momenta and batches (examples/make_snapshots.py).
  for (const char* label : {"model.py:70:forward", "train.py:80:make_optimizer", "data.py:58:prefetch"})
    EXPECT_NE(r.output.find(std::string("address map name | ") + label + " | "), std::string::npos)
        << label << "\n" << r.output;
  EXPECT_NE(r.output.find("address map | iteration 0, "), std::string::npos) << r.output;
  EXPECT_EQ(stats_value(r.output, "placed by"), "pytorch") << r.output;
  EXPECT_EQ(stats_value(r.output, "state"), "snapshot") << r.output;
  EXPECT_NE(stats_value(r.output, "largest free at peak"), "") << r.output;

  const cv::Mat image = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << "no PNG at " << shot;
  const Layout l = layout_for(static_cast<float>(image.cols), static_cast<float>(image.rows), kMenuHeight);
  EXPECT_GT(count_colour(image, l[ViewId::address_map], role_colour(Role::activation)), 1000);
  EXPECT_GT(count_colour(image, l[ViewId::memory_load], kLoad), 100);
}

TEST_F(View, ASnapshotItCannotReadIsRefusedBeforeAWindowOpens) {
  const std::filesystem::path csv = dir_.path() / "trace.csv";
  testing::write_text(csv, "event,id,bytes\nalloc,0,512\n");
  const Result r = run_command(view(csv));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error: " + csv.string() + " is not a PyTorch memory snapshot"), std::string::npos)
      << r.output;
}

TEST(WindowWithoutDisplay, SaysWhatToDoInstead) {
  const Result r = run_command("env -u DISPLAY -u WAYLAND_DISPLAY " + std::string(TIDEPOOL_BINARY) +
                         " --model resnet20 --screenshot /tmp/never.png");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("cannot open a window"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--batch"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tidepool::ui
