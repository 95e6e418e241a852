// ImageNet's validation label files parsed from text (what the flat val/
// layout reads, and what fuzz/imagenet_labels_fuzzer.cpp feeds).
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/imagenet.h"

namespace tidepool::datasets {
namespace {

const std::vector<std::string> kWnids = {"n01", "n02", "n03"};

TEST(ImageNetLabels, KaggleCsvTakesTheFirstWnidOfEachPrediction) {
  const auto labels = parse_val_labels(
      "ImageId,PredictionString\nval_1,n03 1 2 3 4 n01 5 6 7 8\r\n\nval_2,n02 0 0 9 9\n", ValLabelFormat::kaggle_csv,
      kWnids, "sol.csv");
  EXPECT_EQ(labels, (std::unordered_map<std::string, std::int32_t>{{"val_1", 2}, {"val_2", 1}}));
}

TEST(ImageNetLabels, ListTakesIndicesOrWnidsAndSkipsComments) {
  const auto labels = parse_val_labels("# file class\nval_1.JPEG 0\n  \nval_2.JPEG n03\n", ValLabelFormat::list,
                                       kWnids, "val_labels.txt");
  EXPECT_EQ(labels, (std::unordered_map<std::string, std::int32_t>{{"val_1", 0}, {"val_2", 2}}));
}

TEST(ImageNetLabels, BadLinesAreRefusedWithTheSourceAndLine) {
  auto expect_error = [](const std::string& text, ValLabelFormat format, const std::string& part) {
    try {
      parse_val_labels(text, format, kWnids, "labels");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const DatasetError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("labels"), std::string::npos) << e.what();
    }
  };
  expect_error("a.JPEG 3\n", ValLabelFormat::list, "class index 3 out of range (3 classes)");
  expect_error("a.JPEG 99999999999\n", ValLabelFormat::list, "out of range");
  expect_error("\na.JPEG n09\n", ValLabelFormat::list, "line 2");
  expect_error("a.JPEG\n", ValLabelFormat::list, "has no class for 'a.JPEG'");
  expect_error("ImageId,PredictionString\nno comma here\n", ValLabelFormat::kaggle_csv, "malformed line 2");
}

}  // namespace
}  // namespace tidepool::datasets
