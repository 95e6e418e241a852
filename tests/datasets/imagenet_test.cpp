// ImageNet folders built here from small images written with OpenCV, in
// both validation layouts.
#include "datasets/imagenet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "testing/dataset_errors.h"
#include "testing/temp_dir.h"

namespace tidepool::datasets {
namespace {

using testing::TempDir;
using testing::write_text;

// A w x h BGR image whose colour changes along both axes, so different crops
// give different pixels.
cv::Mat pattern(int w, int h, int seed) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<std::uint8_t>((x * 5 + seed * 40) % 256),
                                        static_cast<std::uint8_t>((y * 7) % 256),
                                        static_cast<std::uint8_t>((x + y) * 3 % 256));
    }
  return m;
}

void write_image(const std::filesystem::path& path, const cv::Mat& image) {
  std::filesystem::create_directories(path.parent_path());
  ASSERT_TRUE(cv::imwrite(path.string(), image)) << path;
}

// train/ with three classes (written out of order; their index is sorted order).
void write_train(const TempDir& dir) {
  write_image(dir / "train/n02/a.JPEG", pattern(40, 30, 1));
  write_image(dir / "train/n02/b.JPEG", pattern(30, 50, 2));
  write_image(dir / "train/n01/c.JPEG", pattern(36, 36, 3));
  write_image(dir / "train/n01/a.JPEG", pattern(50, 20, 4));
  write_image(dir / "train/n01/b.jpg", pattern(20, 44, 5));
  write_image(dir / "train/n03/x.JPEG", pattern(33, 27, 6));
}

float normalised(int byte, const Normalization& n, int c) {
  return (static_cast<float>(byte) / 255.0f - n.mean[c]) / n.stddev[c];
}

DatasetOptions sized(std::int64_t side, std::int64_t resize = 0) {
  DatasetOptions o;
  o.image_size = side;
  o.resize_size = resize;
  return o;
}

TEST(ImageNet, TrainClassesAreSortedWnids) {
  TempDir dir;
  write_train(dir);
  const ImageNetDataset train(dir.path(), Split::train, sized(16));
  EXPECT_EQ(train.wnids(), (std::vector<std::string>{"n01", "n02", "n03"}));
  EXPECT_EQ(train.classes(), 3);
  ASSERT_EQ(train.size(), 6);
  const std::vector<std::int32_t> labels = {0, 0, 0, 1, 1, 2};
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(train.label(i), labels[static_cast<std::size_t>(i)]) << i;
  EXPECT_EQ(train.file(1).filename(), "b.jpg");  // sorted by name within a class
  EXPECT_EQ(train.image_shape(), (ImageShape{3, 16, 16}));
  EXPECT_TRUE(train.augments());
}

TEST(ImageNet, ValidationInClassFolders) {
  TempDir dir;
  write_train(dir);
  write_image(dir / "val/n03/v1.JPEG", pattern(20, 20, 7));
  write_image(dir / "val/n01/v2.JPEG", pattern(21, 25, 8));
  const ImageNetDataset val(dir.path(), Split::test, sized(16));
  ASSERT_EQ(val.size(), 2);
  EXPECT_EQ(val.label(0), 0);  // n01/v2
  EXPECT_EQ(val.label(1), 2);  // n03/v1
  EXPECT_EQ(val.label_source(), "class folders");
  EXPECT_FALSE(val.augments());

  write_image(dir / "val/n09/v3.JPEG", pattern(20, 20, 9));
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::test); }, {(dir / "val/n09").string(), "not one of the 3"});
}

TEST(ImageNet, FlatValidationWithLocSolutionCsv) {
  TempDir dir;
  write_train(dir);
  for (int i = 1; i <= 3; ++i) {
    write_image(dir / ("val/ILSVRC2012_val_0000000" + std::to_string(i) + ".JPEG"), pattern(24, 24, i));
  }
  // The Kaggle layout keeps the CSV beside val/; extra rows (images not
  // present) are fine.
  write_text(dir / "LOC_val_solution.csv",
             "ImageId,PredictionString\r\n"
             "ILSVRC2012_val_00000003,n01 1 2 3 4 n01 5 6 7 8\r\n"
             "ILSVRC2012_val_00000001,n03 10 10 20 20\r\n"
             "ILSVRC2012_val_00000009,n02 1 1 2 2\r\n"
             "ILSVRC2012_val_00000002,n02 0 0 5 5\r\n");
  const ImageNetDataset val(dir.path(), Split::test, sized(16));
  ASSERT_EQ(val.size(), 3);
  EXPECT_EQ(val.label(0), 2);
  EXPECT_EQ(val.label(1), 1);
  EXPECT_EQ(val.label(2), 0);
  EXPECT_EQ(val.label_source(), (dir / "LOC_val_solution.csv").string());

  write_image(dir / "val/ILSVRC2012_val_00000004.JPEG", pattern(24, 24, 4));
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::test); },
               {(dir / "val/ILSVRC2012_val_00000004.JPEG").string(), "no label"});
}

TEST(ImageNet, FlatValidationWithLabelsTxtByIndexOrWnid) {
  TempDir dir;
  write_train(dir);
  write_image(dir / "val/b.JPEG", pattern(24, 24, 1));
  write_image(dir / "val/a.JPEG", pattern(24, 24, 2));
  write_image(dir / "val/c.JPEG", pattern(24, 24, 3));
  write_text(dir / "val/val_labels.txt", "# filename class\na.JPEG 2\n\nb.JPEG n01\nc 1\n");
  const ImageNetDataset val(dir.path(), Split::test, sized(16));
  ASSERT_EQ(val.size(), 3);
  EXPECT_EQ(val.label(0), 2);  // a
  EXPECT_EQ(val.label(1), 0);  // b
  EXPECT_EQ(val.label(2), 1);  // c

  write_text(dir / "val/val_labels.txt", "a.JPEG 2\nb.JPEG n77\nc.JPEG 1\n");
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::test); },
               {(dir / "val/val_labels.txt").string(), "line 2", "n77"});
  write_text(dir / "val/val_labels.txt", "a.JPEG 3\n");
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::test); }, {(dir / "val/val_labels.txt").string(), "out of range"});
  std::filesystem::remove(dir / "val/val_labels.txt");
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::test); }, {(dir / "val").string(), "no label file", "val_labels.txt"});
}

TEST(ImageNet, EvalResizesShorterSideThenCropsTheCentre) {
  TempDir dir;
  // 40x20, left half black, right half white, lossless: resized to 20x10 and
  // centre-cropped to 10x10 it shows columns 5..14 - five black, five white.
  cv::Mat halves(20, 40, CV_8UC3, cv::Scalar(0, 0, 0));
  halves(cv::Rect(20, 0, 20, 20)).setTo(cv::Scalar(255, 255, 255));
  write_image(dir / "val/n01/halves.png", halves);
  // Solid blue (BGR) - to check the channel order.
  write_image(dir / "val/n02/blue.png", cv::Mat(12, 14, CV_8UC3, cv::Scalar(255, 0, 0)));
  write_image(dir / "train/n01/t.png", halves);
  write_image(dir / "train/n02/t.png", halves);

  const ImageNetDataset val(dir.path(), Split::test, sized(10, 10));
  const Normalization n = val.normalization();
  std::vector<float> a(3 * 100), b(3 * 100);
  std::int32_t label = -1;
  Rng r1(1), r2(2);
  ASSERT_TRUE(val.read(0, a.data(), label, r1));
  ASSERT_TRUE(val.read(0, b.data(), label, r2));
  EXPECT_EQ(a, b);  // no randomness in evaluation
  EXPECT_EQ(label, 0);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 10; ++y) {
      EXPECT_NEAR(a[c * 100 + y * 10 + 0], normalised(0, n, c), 1e-4f);
      EXPECT_NEAR(a[c * 100 + y * 10 + 3], normalised(0, n, c), 1e-4f);
      EXPECT_NEAR(a[c * 100 + y * 10 + 6], normalised(255, n, c), 1e-4f);
      EXPECT_NEAR(a[c * 100 + y * 10 + 9], normalised(255, n, c), 1e-4f);
    }

  ASSERT_TRUE(val.read(1, a.data(), label, r1));
  EXPECT_EQ(label, 1);
  for (int p = 0; p < 100; ++p) {
    EXPECT_NEAR(a[p], normalised(0, n, 0), 1e-4f);          // R
    EXPECT_NEAR(a[200 + p], normalised(255, n, 2), 1e-4f);  // B
  }
}

TEST(ImageNet, TrainCropsAreDeterministicPerSeed) {
  TempDir dir;
  write_train(dir);
  const ImageNetDataset train(dir.path(), Split::train, sized(16));
  std::vector<float> a(3 * 256), b(3 * 256), c(3 * 256);
  std::int32_t label = -1;
  int differing = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    Rng ra(sample_seed(seed, 0, 1)), rb(sample_seed(seed, 0, 1)), rc(sample_seed(seed + 100, 0, 1));
    ASSERT_TRUE(train.read(1, a.data(), label, ra));
    ASSERT_TRUE(train.read(1, b.data(), label, rb));
    ASSERT_TRUE(train.read(1, c.data(), label, rc));
    EXPECT_EQ(a, b) << "seed " << seed;
    differing += a != c;
  }
  EXPECT_GE(differing, 7);
}

TEST(ImageNet, RandomResizedCropFollowsTorchvision) {
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    Rng rng(seed);
    const CropBox b = random_resized_crop(375, 500, rng);
    ASSERT_GE(b.top, 0);
    ASSERT_GE(b.left, 0);
    ASSERT_LE(b.top + b.height, 375);
    ASSERT_LE(b.left + b.width, 500);
    const double area = static_cast<double>(b.height * b.width) / (375.0 * 500.0);
    const double ratio = static_cast<double>(b.width) / static_cast<double>(b.height);
    EXPECT_GE(area, 0.07);
    EXPECT_LE(area, 1.0);
    EXPECT_GE(ratio, 0.74);
    EXPECT_LE(ratio, 1.36);
    Rng again(seed);
    EXPECT_EQ(random_resized_crop(375, 500, again), b);
  }
  // A 1x100 strip: no try fits, so the centred crop clamped to ratio 4/3.
  Rng rng(3);
  EXPECT_EQ(random_resized_crop(1, 100, rng), (CropBox{0, 49, 1, 1}));
  // A 100x10 column (ratio 0.1 < 3/4): full width, height 10 / (3/4) = 13.
  EXPECT_EQ(random_resized_crop(100, 10, rng, 0.99, 1.0, 0.75, 0.76), (CropBox{43, 0, 13, 10}));
}

TEST(ImageNet, CorruptImageIsSkippedAndCounted) {
  TempDir dir;
  write_train(dir);
  testing::write_bytes(dir / "train/n02/broken.JPEG", {0xFF, 0xD8, 0xFF, 0x00, 'n', 'o', 't', ' ', 'a', ' ', 'j', 'p', 'g'});
  const ImageNetDataset train(dir.path(), Split::train, sized(16));
  ASSERT_EQ(train.size(), 7);
  ASSERT_EQ(train.file(5).filename(), "broken.JPEG");
  std::vector<float> image(3 * 256);
  std::int32_t label = -1;
  Rng rng(1);
  EXPECT_FALSE(train.read(5, image.data(), label, rng));
  EXPECT_EQ(train.skipped(), 1);
  EXPECT_FALSE(train.read(5, image.data(), label, rng));
  EXPECT_EQ(train.skipped(), 1);  // one file, counted once

  // Training goes on with full batches; evaluation leaves the image out.
  LoaderOptions opt = LoaderOptions::training(7, 1);
  opt.workers = 2;
  std::vector<std::byte> memory(BatchLoader::required_bytes(train, opt));
  BatchLoader loader(train, memory, opt);
  loader.start_epoch(0);
  auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->size, 7);
  EXPECT_EQ(batch->replaced, 1);
  EXPECT_EQ(std::count(batch->samples.begin(), batch->samples.end(), 5), 0);

  DatasetOptions eval_opt = sized(16);
  eval_opt.augment = false;
  const ImageNetDataset plain(dir.path(), Split::train, eval_opt);
  std::vector<std::byte> memory2(BatchLoader::required_bytes(plain, LoaderOptions::evaluation(4)));
  BatchLoader eval(plain, memory2, LoaderOptions::evaluation(4));
  eval.start_epoch(0);
  std::int64_t delivered = 0, dropped = 0;
  while (auto b = eval.next()) delivered += b->size, dropped += b->dropped;
  EXPECT_EQ(delivered, 6);
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(plain.skipped(), 1);
}

TEST(ImageNet, BadFoldersNameThePath) {
  TempDir dir;
  testing::expect_dataset_error([&] { ImageNetDataset(dir / "missing", Split::train); }, {(dir / "missing").string(), "not found"});
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::train); }, {(dir / "train").string(), "not found"});
  std::filesystem::create_directories(dir / "train/n01");
  std::filesystem::create_directories(dir / "train/n02");
  write_text(dir / "train/n01/notes.txt", "not an image");
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::train); }, {(dir / "train").string(), "no images"});
  std::filesystem::create_directories(dir / "val");
  testing::expect_dataset_error([&] { ImageNetDataset(dir.path(), Split::test); }, {(dir / "val").string(), "no images"});
  testing::expect_dataset_error([&] { make_dataset("imagenet", dir / "nowhere", Split::test); }, {(dir / "nowhere").string()});
}

}  // namespace
}  // namespace tidepool::datasets
