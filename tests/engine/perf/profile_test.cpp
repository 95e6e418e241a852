// Profiles as files: round trips, clear refusals, the shipped
// specification profiles, and how the model borrows missing classes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/perf/perf_model.h"
#include "engine/perf/profile.h"
#include "engine/perf/spec_profiles.h"
#include "testing/temp_dir.h"

namespace tidepool {
namespace {

Profile small_profile() {
  Profile p;
  p.name = "test device";
  p.source = "measured";
  p.notes = "made by a test";
  p.memory_bytes = 1ull << 30;
  p.fit(WorkClass::conv_forward) = ClassFit{120, 1e8, 0.5, 0, 7};
  p.fit(WorkClass::relu_forward) = ClassFit{3, 0, 0, 0, 5};
  p.to_host = {10, 11, 3};
  p.to_device = {12, 13, 3};
  p.compute_samples.push_back({WorkClass::conv_forward, "conv1 fwd", 16, 1e8, 1, 900});
  p.copy_samples.push_back({false, 4096, 12.5});
  return p;
}

TEST(Profile, RoundTripsThroughJsonAndAFile) {
  const Profile p = small_profile();
  EXPECT_EQ(profile_from_json(to_json(p)), p);
  testing::TempDir dir("profile");
  const std::string file = (dir.path() / "p.json").string();
  save_profile(p, file);
  EXPECT_EQ(load_profile(file), p);
}

TEST(Profile, RefusesBadFieldsNamingThem) {
  auto refuses = [](const std::function<void(nlohmann::json&)>& spoil, const std::string& named) {
    nlohmann::json j = to_json(small_profile());
    spoil(j);
    try {
      profile_from_json(j);
      ADD_FAILURE() << "accepted a profile without " << named;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  refuses([](auto& j) { j["format"] = "something else"; }, "format");
  refuses([](auto& j) { j["compute"]["conv.forward"]["slope"] = 2; }, "slope");
  refuses([](auto& j) { j["compute"]["conv.forward"]["peak_gflops"] = 0; }, "peak_gflops");
  refuses([](auto& j) { j["compute"]["warp.drive"] = j["compute"]["conv.forward"]; }, "warp.drive");
  refuses([](auto& j) { j["link"]["to_host"]["gbps"] = -1; }, "gbps");
  refuses([](auto& j) { j["source"] = "guessed"; }, "source");
  refuses([](auto& j) { j["memory_bytes"] = "lots"; }, "memory_bytes");
}

TEST(Profile, LoadingNamesTheFile) {
  testing::TempDir dir("profile");
  const std::string missing = (dir.path() / "none.json").string();
  try {
    load_profile(missing);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  const std::string broken = (dir.path() / "broken.json").string();
  std::ofstream(broken) << "{ not json";
  EXPECT_THROW(load_profile(broken), std::runtime_error);
  EXPECT_THROW(resolve_profile("no-such-gpu"), std::runtime_error);
}

TEST(SpecProfiles, TheShippedFilesAreWhatTheCodeDerives) {
  for (const GpuSpec& g : gpu_specs()) {
    const auto derived = specification_profile(g.key);
    ASSERT_TRUE(derived);
    EXPECT_EQ(derived->source, "specification");
    EXPECT_EQ(resolve_profile(g.key), *derived);
    const std::string file = std::string(TIDEPOOL_SOURCE_DIR) + "/profiles/" + g.key + ".json";
    EXPECT_EQ(load_profile(file), *derived) << file << " differs from the code: regenerate it with "
                                            << "tidepool profile --spec " << g.key << " -o " << file;
  }
}

// A 16-bit step: dense work at the profile's 16-bit speed-up, memory-bound
// work at twice its f32 speed; launches cost what they cost in f32.
TEST(PerfModel, SixteenBitStepsRunAtTheirProfilesRates) {
  Profile p = small_profile();
  p.fit(WorkClass::conv_forward)->launch_us = 4;
  p.fit(WorkClass::relu_forward)->launch_us = 2;
  p.dense_16bit_speedup = 8;
  const PerfModel model(p);
  const double conv32 = model.compute_us({WorkClass::conv_forward, 1e9, 2});
  EXPECT_DOUBLE_EQ(model.compute_us({WorkClass::conv_forward, 1e9, 2, DType::f16}), 8 + (conv32 - 8) / 8);
  EXPECT_DOUBLE_EQ(model.compute_us({WorkClass::conv_forward, 1e9, 2, DType::bf16}), 8 + (conv32 - 8) / 8);
  const double relu32 = model.compute_us({WorkClass::relu_forward, 3e6, 1});
  EXPECT_DOUBLE_EQ(relu32, 2 + 1000);
  EXPECT_DOUBLE_EQ(model.compute_us({WorkClass::relu_forward, 3e6, 1, DType::f16}), 2 + 500);

  // The counter records what the kernel that sets the class computed on;
  // an f32 copy around a step leaves it the step's.
  const GpuQueries gpu(GpuKernelFacts{"a GPU", true, true, {}});
  WorkCounter counter(gpu);
  const ConvShape s{.n = 2, .c = 8, .h = 4, .w = 4, .k = 8, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1, .dtype = DType::f16};
  counter.conv_forward(s, ConvScheme::p, nullptr, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(counter.take().dtype, DType::f16);
  counter.convert(10, DType::bf16, nullptr, DType::f32, nullptr, 1.0f);
  counter.relu_forward(10, DType::f32, nullptr, nullptr);
  const Work copied = counter.take();
  EXPECT_EQ(copied.work_class, WorkClass::relu_forward);
  EXPECT_EQ(copied.dtype, DType::f32);
}

TEST(Profile, AGpuSpecificationWrittenBeforeItCarriedItsAnswersIsRefused) {
  nlohmann::json old = to_json(*specification_profile("v100"));
  old.erase("kernels");
  try {
    profile_from_json(old);
    ADD_FAILURE() << "an old GPU profile would plan with the host's answers";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tidepool profile --spec"), std::string::npos) << e.what();
  }
  nlohmann::json measured = to_json(small_profile());
  measured.erase("kernels");
  EXPECT_EQ(profile_from_json(measured).kernels, ProfiledKernels::cpu) << "measured before: on the cpu device";
}

TEST(PerfModel, AClassWithoutAFitBorrowsTheNearestRelatedOne) {
  const PerfModel model(small_profile());
  const Work depthwise{WorkClass::depthwise_forward, 1e9, 1};
  EXPECT_DOUBLE_EQ(model.compute_us(depthwise), fitted_us(*small_profile().fit(WorkClass::conv_forward), 1e9, 1));
  EXPECT_DOUBLE_EQ(model.compute_us({WorkClass::batchnorm_forward, 3e6, 1}), 1000.0)
      << "batch norm borrows relu's 3 GFLOP/s";
  const auto borrowed = model.borrowed();
  EXPECT_NE(std::find(borrowed.begin(), borrowed.end(), "depthwise.forward <- conv.forward"), borrowed.end());
  EXPECT_EQ(model.compute_us({WorkClass::copy, 5, 0}), 0) << "no kernel, no time";
  EXPECT_DOUBLE_EQ(model.copy_us(11000, true), 10 + 1) << "latency + bytes / bandwidth";
}

TEST(PerfModel, RefusesAClassNothingRelatedCanLendTo) {
  Profile p = small_profile();
  p.fit(WorkClass::relu_forward).reset();  // only conv is left: the memory-bound classes have no relative
  const PerfModel model(p);
  EXPECT_THROW(model.compute_us({WorkClass::relu_backward, 100, 1}), std::invalid_argument);
  Profile none = small_profile();
  none.compute = {};
  EXPECT_THROW(PerfModel{none}, std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
