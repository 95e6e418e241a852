// The --batch pictures: scenes built by hand (so the checks do not depend
// on how the builders read events) are drawn with the OpenCV painter and the
// pixels read back: each thing must be where the picture's layout says and
// in the palette's colour. Then the whole path from a snapshot to three PNG
// files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "engine/observe/sinks/ring_sink.h"
#include "testing/picture_scenes.h"
#include "testing/temp_dir.h"
#include "ui/paint/address_map_picture.h"
#include "ui/paint/chart.h"
#include "ui/paint/memory_load_picture.h"
#include "ui/paint/opencv_painter.h"
#include "ui/paint/timeline_picture.h"
#include "ui/png/images.h"
#include "ui/png/run_pictures.h"
#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

using testing::address_map_scene;
using testing::KiB;
using testing::memory_load_scene;
using testing::span;
using testing::TempDir;
using testing::timeline_scene;
using png::address_map_image;
using png::memory_load_image;
using png::timeline_image;

cv::Vec3b pixel(const cv::Mat& image, double x, double y) {
  return image.at<cv::Vec3b>(static_cast<int>(y), static_cast<int>(x));
}

cv::Vec3b colour(std::uint32_t rgb) {
  const cv::Scalar s = paint::bgr(rgb);
  return {static_cast<uchar>(s[0]), static_cast<uchar>(s[1]), static_cast<uchar>(s[2])};
}

// How many pixels of `area` are exactly `rgb`.
int count(const cv::Mat& image, cv::Rect area, std::uint32_t rgb) {
  area &= cv::Rect(0, 0, image.cols, image.rows);
  const cv::Vec3b want = colour(rgb);
  int n = 0;
  for (int y = area.y; y < area.y + area.height; ++y)
    for (int x = area.x; x < area.x + area.width; ++x) n += image.at<cv::Vec3b>(y, x) == want;
  return n;
}

// Whether some pixel of `area` is within `tolerance` of `rgb` in every
// channel (for anti-aliased curves).
bool has_near(const cv::Mat& image, cv::Rect area, std::uint32_t rgb, int tolerance = 40) {
  area &= cv::Rect(0, 0, image.cols, image.rows);
  const cv::Vec3b want = colour(rgb);
  for (int y = area.y; y < area.y + area.height; ++y)
    for (int x = area.x; x < area.x + area.width; ++x) {
      const cv::Vec3b p = image.at<cv::Vec3b>(y, x);
      if (std::abs(p[0] - want[0]) <= tolerance && std::abs(p[1] - want[1]) <= tolerance &&
          std::abs(p[2] - want[2]) <= tolerance)
        return true;
    }
  return false;
}

// The layouts the images are drawn with: OpenCV's text measures over the
// whole picture.
paint::Box whole(int width, int height) { return {0, 0, static_cast<float>(width), static_cast<float>(height)}; }
const paint::Painter& opencv_measures() {
  static cv::Mat unused(1, 1, CV_8UC3);
  static const paint::OpenCvPainter painter(unused);
  return painter;
}
paint::TimelineLayout timeline_layout(const TimelineScene& scene, int width, int height) {
  return paint::timeline_layout(opencv_measures(), scene, whole(width, height));
}
paint::AddressMapLayout address_map_layout(const AddressMapScene& scene, int width, int height) {
  return paint::address_map_layout(opencv_measures(), scene, whole(width, height));
}
paint::MemoryLoadLayout memory_load_layout(const MemoryLoadScene& scene, int width, int height) {
  return paint::memory_load_layout(opencv_measures(), scene, whole(width, height));
}
cv::Rect rect(const paint::Box& b) {
  return cv::Rect(cv::Point(static_cast<int>(std::lround(b.x0)), static_cast<int>(std::lround(b.y0))),
                  cv::Point(static_cast<int>(std::lround(b.x1)), static_cast<int>(std::lround(b.y1))));
}

TEST(Png, TimelineDrawsSpansInTheirStreamsLanes) {
  const TimelineScene scene = timeline_scene();
  const cv::Mat image = timeline_image(scene, 1200, 600);
  ASSERT_EQ(image.cols, 1200);
  ASSERT_EQ(image.rows, 600);
  ASSERT_EQ(image.type(), CV_8UC3);
  const auto l = timeline_layout(scene, 1200, 600);
  // Just inside each span's top edge, clear of its centred label.
  auto inside = [&](const TimelineSpan& s) {
    return pixel(image, l.x(s.start_us) + 3, l.lane(s.lane).y0 + 6);
  };
  EXPECT_EQ(inside(scene.spans[0]), colour(span_colour(SpanKind::forward)));
  EXPECT_EQ(inside(scene.spans[1]), colour(span_colour(SpanKind::offload)));
  EXPECT_EQ(inside(scene.spans[2]), colour(span_colour(SpanKind::prefetch)));
  EXPECT_EQ(inside(scene.spans[4]), colour(span_colour(SpanKind::backward)));
  // The lanes stack compute, offload, prefetch from the top.
  EXPECT_LT(l.lane(Stream::compute).y0, l.lane(Stream::offload).y0);
  EXPECT_LT(l.lane(Stream::offload).y0, l.lane(Stream::prefetch).y0);
}

TEST(Png, TimelineMarksAComputeStallInTheComputeLane) {
  const TimelineScene scene = timeline_scene();
  const cv::Mat image = timeline_image(scene, 1200, 600);
  const auto l = timeline_layout(scene, 1200, 600);
  const int x0 = l.x.px(1000), x1 = l.x.px(1400);
  const cv::Rect compute = rect(l.lane(Stream::compute)), offload = rect(l.lane(Stream::offload));
  const cv::Rect stall(x0, compute.y, x1 - x0, compute.height);
  const std::uint32_t red = span_colour(SpanKind::wait);
  // Hatched in red over the lane's full height.
  EXPECT_GT(count(image, stall, red), stall.area() / 6);
  EXPECT_GT(count(image, cv::Rect(x0, compute.y, x1 - x0, 4), red), 0) << "from the lane's top edge";
  EXPECT_GT(count(image, cv::Rect(x0, compute.y + compute.height - 4, x1 - x0, 4), red), 0) << "to its bottom";
  EXPECT_EQ(count(image, cv::Rect(x0, offload.y, x1 - x0, offload.height), red), 0) << "not in the offload lane";
  // The forward before it has none.
  const cv::Rect forward(l.x.px(0) + 2, compute.y, l.x.px(1000) - l.x.px(0) - 4, compute.height);
  EXPECT_EQ(count(image, forward, red), 0);

  // A stall far too short for a pixel still shows as one column.
  TimelineScene blip = scene;
  blip.end_us = 2'000'000;
  blip.spans = {span(Stream::compute, SpanKind::wait, 500'000, 500'001)};
  const cv::Mat b = timeline_image(blip, 1200, 600);
  const auto bl = timeline_layout(blip, 1200, 600);
  EXPECT_GT(count(b, cv::Rect(bl.x.px(500'000) - 1, compute.y, 3, compute.height), red), compute.height / 2);
}

TEST(Png, AddressMapPutsEachBlockAtItsAddressInItsRolesColour) {
  const AddressMapScene scene = address_map_scene();
  const cv::Mat image = address_map_image(scene, 1400, 800);
  ASSERT_EQ(image.size(), cv::Size(1400, 800));
  const auto l = address_map_layout(scene, 1400, 800);
  // A point a quarter of the way into a block's rectangle at a given step
  // column, clear of its outline and its centred name.
  auto at = [&](const MapBlock& b, int step) {
    const double y = l.y(static_cast<double>(b.offset) + 0.25 * static_cast<double>(b.bytes));
    return pixel(image, l.x(step + 0.5), y);
  };
  const MapBlock &weights = scene.blocks[0], &activation = scene.blocks[1], &gradient = scene.blocks[2],
                 &workspace = scene.blocks[3];
  EXPECT_EQ(at(weights, 2), colour(role_colour(Role::weight)));
  EXPECT_EQ(at(activation, 2), colour(role_colour(Role::activation)));
  EXPECT_EQ(at(activation, 5), colour(kInFlightToHost)) << "offloading from step 4 until freed";
  EXPECT_EQ(at(gradient, 5), colour(kInFlightFromHost)) << "prefetched until step 6";
  EXPECT_EQ(at(gradient, 8), colour(role_colour(Role::activation_gradient)));
  EXPECT_EQ(at(workspace, 8), colour(role_colour(Role::workspace)));
  // Address grows upwards: the weights (at 0) are below the activation.
  EXPECT_GT(l.y(0), l.y(256.0 * KiB));
  // Above the footprint nothing is placed; outside the blocks' steps the
  // same address is free.
  EXPECT_NE(pixel(image, l.x(2.5), l.y(950.0 * KiB)), colour(role_colour(Role::activation)));
  EXPECT_NE(pixel(image, l.x(0.5), l.y(300.0 * KiB)), colour(role_colour(Role::activation)));
  // The largest free block at the peak, in the peak step's column.
  EXPECT_EQ(pixel(image, l.x(5.5), l.y(640.0 * KiB)), colour(kLargestHole));
  // The pool line.
  const int pool_y = l.y.px(1024.0 * KiB);
  const cv::Rect plot = rect(l.plot);
  EXPECT_GT(count(image, cv::Rect(plot.x, pool_y, plot.width, 1), kBudget), plot.width * 9 / 10);
}

TEST(Png, MemoryLoadDrawsTheBudgetLineAndMarksThePeak) {
  const MemoryLoadScene scene = memory_load_scene();
  const cv::Mat image = memory_load_image(scene, 1600, 900);
  ASSERT_EQ(image.size(), cv::Size(1600, 900));
  const auto l = memory_load_layout(scene, 1600, 900);
  const int budget_y = l.y.px(1024.0 * KiB);
  const cv::Rect curves = rect(l.curves);
  EXPECT_GT(count(image, cv::Rect(curves.x, budget_y, curves.width, 1), kBudget), curves.width * 9 / 10);
  EXPECT_EQ(count(image, cv::Rect(0, 0, 1600, 900), kLoadLimit), 0) << "no AutoSwap, no limit line";
  // AutoSwap's load limit: a line of its own under the budget.
  MemoryLoadScene limited = scene;
  limited.load_limit_bytes = 800 * KiB;
  const cv::Mat with_limit = memory_load_image(limited, 1600, 900);
  const auto ll = memory_load_layout(limited, 1600, 900);
  const int limit_y = ll.y.px(800.0 * KiB);
  const cv::Rect limited_curves = rect(ll.curves);
  EXPECT_GT(count(with_limit, cv::Rect(limited_curves.x, limit_y, limited_curves.width, 1), kLoadLimit),
            limited_curves.width / 2);
  // The load curve at a step of the first iteration, and the peak marker
  // (white) on the second's highest step.
  const double x3 = l.x(3.5);
  EXPECT_TRUE(has_near(image, cv::Rect(static_cast<int>(x3) - 2, l.y.px(340.0 * KiB) - 2, 5, 5), kLoad));
  const cv::Point peak(l.x.px(15.5), l.y.px(static_cast<double>(scene.peak_load_bytes)));
  EXPECT_TRUE(has_near(image, cv::Rect(peak.x - 6, peak.y - 6, 13, 13), 0xFFFFFF, 30));
  // Each per-iteration panel has its curve in it.
  EXPECT_TRUE(has_near(image, rect(l.panels[0]), kLoad, 20));
  EXPECT_TRUE(has_near(image, rect(l.panels[1]), 0xE8B04C, 20)) << "loss";
  EXPECT_TRUE(has_near(image, rect(l.panels[2]), 0x5CBF6A, 20)) << "accuracy";
  EXPECT_TRUE(has_near(image, rect(l.panels[3]), 0xC678DD, 20)) << "images/s";
  for (const paint::Box& p : l.panels) {
    EXPECT_GT(p.y0, l.curves.y1) << "below the curves";
    EXPECT_LE(p.x1, image.cols);
    EXPECT_LE(p.y1, image.rows);
  }
}

TEST(Png, EmptyScenesStillDrawAPicture) {
  const cv::Mat pictures[] = {timeline_image({}, 800, 450), address_map_image({}, 800, 450),
                              memory_load_image({}, 800, 450)};
  for (const cv::Mat& image : pictures) {
    ASSERT_EQ(image.size(), cv::Size(800, 450));
    // The message in the middle: light text on the background.
    EXPECT_TRUE(has_near(image, cv::Rect(200, 180, 400, 90), paint::kDimText, 30));
    EXPECT_EQ(pixel(image, 5, 440), colour(kBackground));
  }
  // Only samples, or only iteration summaries, are not empty: the other half says so.
  MemoryLoadScene only_iterations = memory_load_scene();
  only_iterations.points.clear();
  EXPECT_EQ(memory_load_image(only_iterations, 800, 450).size(), cv::Size(800, 450));
  MemoryLoadScene only_points = memory_load_scene();
  only_points.iterations.clear();
  EXPECT_EQ(memory_load_image(only_points, 800, 450).size(), cv::Size(800, 450));
  EXPECT_THROW(timeline_image(timeline_scene(), 100, 80), std::invalid_argument);
}

TEST(Png, SmallPicturesDrawWithoutFailing) {
  // The smallest size allowed: everything squeezed, nothing out of bounds.
  EXPECT_EQ(timeline_image(timeline_scene(), 320, 200).size(), cv::Size(320, 200));
  EXPECT_EQ(address_map_image(address_map_scene(), 320, 200).size(), cv::Size(320, 200));
  EXPECT_EQ(memory_load_image(memory_load_scene(), 320, 200).size(), cv::Size(320, 200));
}

TEST(Png, CanvasFormatsBytesAndPicksRoundTicks) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(3 * KiB), "3.00 KiB");
  EXPECT_EQ(format_bytes(12 * KiB * KiB + 512 * KiB), "12.5 MiB");
  EXPECT_EQ(format_bytes(850 * KiB * KiB), "850 MiB");
  EXPECT_EQ(paint::nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(paint::format_tick(0.25, 0.05), "0.25");
  EXPECT_EQ(paint::format_tick(40, 20), "40");
  EXPECT_EQ(paint::bgr(0x102030), cv::Scalar(0x30, 0x20, 0x10)) << "OpenCV is BGR";
}

// A snapshot of two short iterations as the engine would emit them: a
// weight placed once, an activation offloaded and freed, a stall.
RingSnapshot two_iterations() {
  RingSnapshot s;
  s.placement.push_back({-1, 0, PoolAction::place, 0, "fc.w", Role::weight, 0, 64 * KiB, 0});
  double t = 0;
  for (std::int64_t it = 0; it < 2; ++it) {
    const double start = t;
    s.allocs.push_back({it, 0, PoolAction::place, 1, "fc.out", Role::activation, 64 * KiB, 128 * KiB, t});
    s.spans.push_back({it, 0, Stream::compute, SpanKind::forward, "fc", "", 0, t, t + 400});
    s.loads.push_back({it, 0, t + 400, 192 * KiB, 192 * KiB});
    s.spans.push_back({it, 1, Stream::offload, SpanKind::offload, "fc", "fc.out", 128 * KiB, t + 400, t + 900});
    s.spans.push_back({it, 1, Stream::compute, SpanKind::wait, "fc", "fc.out", 0, t + 400, t + 900});
    s.allocs.push_back({it, 1, PoolAction::free, 1, "fc.out", Role::activation, 64 * KiB, 128 * KiB, t + 900});
    s.loads.push_back({it, 1, t + 900, 64 * KiB, 64 * KiB});
    s.spans.push_back({it, 2, Stream::compute, SpanKind::update, "", "", 0, t + 900, t + 1000});
    s.loads.push_back({it, 2, t + 1000, 64 * KiB, 64 * KiB});
    t += 1000;
    s.iterations.push_back({.iteration = it, .start_us = start, .end_us = t, .peak_load_bytes = 192 * KiB,
                            .footprint_bytes = 192 * KiB, .loss = 2.0f - 0.5f * static_cast<float>(it),
                            .accuracy = 0.1f * static_cast<float>(it)});
  }
  return s;
}

TEST(Png, WriteRunPicturesWritesThreePngsTheRightSize) {
  TempDir dir;
  const auto folder = dir / "run";  // made if missing
  write_run_pictures(two_iterations(), 256 * KiB, 32, folder);
  for (const char* name : {kTimelinePicture, kAddressMapPicture, kMemoryLoadPicture}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(std::filesystem::exists(folder / name));
    EXPECT_GT(std::filesystem::file_size(folder / name), 1000u);
    const cv::Mat back = cv::imread((folder / name).string(), cv::IMREAD_COLOR);
    ASSERT_FALSE(back.empty());
    EXPECT_EQ(back.cols, kRunPictureWidth);
    EXPECT_EQ(back.rows, kRunPictureHeight);
  }
  // No events at all: three pictures that say so.
  write_run_pictures(RingSnapshot{}, 0, 32, dir / "empty");
  for (const char* name : {kTimelinePicture, kAddressMapPicture, kMemoryLoadPicture})
    EXPECT_EQ(cv::imread((dir / "empty" / name).string()).size(), cv::Size(kRunPictureWidth, kRunPictureHeight));
}

// A sim run's memory_load.png says its losses and accuracies are no
// numbers: the loss panel draws no line (its colour, 0xE8B04C, is left to
// the legend's swatch at most).
TEST(Png, WriteRunPicturesOfASimRunDrawNoLossLine) {
  TempDir dir;
  write_run_pictures(two_iterations(), 256 * KiB, 32, dir / "cpu");
  write_run_pictures(two_iterations(), 256 * KiB, 32, dir / "sim", 0, /*computes_values=*/false);
  auto loss_pixels = [&](const char* run) {
    const cv::Mat image = cv::imread((dir / run / kMemoryLoadPicture).string(), cv::IMREAD_COLOR);
    return count(image, cv::Rect(0, 0, image.cols, image.rows), 0xE8B04C);
  };
  EXPECT_GT(loss_pixels("cpu"), loss_pixels("sim") + 100);
}

TEST(Png, WriteRunPicturesNamesTheFileItCannotWrite) {
  TempDir dir;
  std::ofstream(dir / "not_a_folder") << "x";  // a file where the folder should be
  try {
    write_run_pictures(two_iterations(), 256 * KiB, 32, dir / "not_a_folder");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("timeline.png"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tidepool::ui
