// CIFAR-10/100 binary files written here, byte by byte, in the published
// record layout, then read back through the loader.
#include "datasets/cifar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <tuple>
#include <vector>

#include "datasets/dataset.h"
#include "testing/dataset_errors.h"
#include "testing/temp_dir.h"

namespace tidepool::datasets {
namespace {

using testing::TempDir;
using testing::write_bytes;

constexpr int kPlane = 32 * 32;

// A pixel value that differs by record, channel, row and column, so any
// misplaced byte shows up.
std::uint8_t pixel(int record, int c, int y, int x) {
  return static_cast<std::uint8_t>((record * 37 + c * 101 + y * 7 + x * 3) % 256);
}

// Records [first, first + count) with the given label bytes in front.
std::vector<std::uint8_t> records(int first, int count, int label_bytes,
                                  const std::function<std::vector<int>(int)>& labels) {
  std::vector<std::uint8_t> out;
  for (int r = first; r < first + count; ++r) {
    for (int l : labels(r)) out.push_back(static_cast<std::uint8_t>(l));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) out.push_back(pixel(r, c, y, x));
  }
  EXPECT_EQ(out.size(), static_cast<std::size_t>(count * (label_bytes + 3072)));
  return out;
}

// Five train files of 3 records each (records 0..14) and a test file of 4.
void write_cifar10(const TempDir& dir) {
  auto label = [](int r) { return std::vector<int>{r % 10}; };
  for (int f = 0; f < 5; ++f) {
    write_bytes(dir / ("data_batch_" + std::to_string(f + 1) + ".bin"), records(f * 3, 3, 1, label));
  }
  write_bytes(dir / "test_batch.bin", records(100, 4, 1, label));
}

float normalised(std::uint8_t p, const Normalization& n, int c) {
  return (static_cast<float>(p) / 255.0f - n.mean[c]) / n.stddev[c];
}

TEST(Cifar, Cifar10RoundTripIsExact) {
  TempDir dir;
  write_cifar10(dir);
  const CifarDataset train(CifarKind::cifar10, dir.path(), Split::train);
  EXPECT_EQ(train.size(), 15);
  EXPECT_EQ(train.classes(), 10);
  EXPECT_EQ(train.image_shape(), (ImageShape{3, 32, 32}));
  EXPECT_TRUE(train.augments());

  const CifarDataset test(CifarKind::cifar10, dir.path(), Split::test);
  EXPECT_EQ(test.size(), 4);
  EXPECT_FALSE(test.augments());
  const Normalization n = test.normalization();
  EXPECT_FLOAT_EQ(n.mean[0], 0.4914f);
  EXPECT_FLOAT_EQ(n.stddev[2], 0.2616f);

  std::vector<float> image(3 * kPlane);
  for (int i = 0; i < 4; ++i) {
    std::int32_t label = -1;
    Rng rng(1);
    ASSERT_TRUE(test.read(i, image.data(), label, rng));
    EXPECT_EQ(label, (100 + i) % 10);
    EXPECT_EQ(test.label(i), label);
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) {
          ASSERT_NEAR(image[c * kPlane + y * 32 + x], normalised(pixel(100 + i, c, y, x), n, c), 1e-5f)
              << "sample " << i << " c" << c << " y" << y << " x" << x;
        }
  }
  // The train files are concatenated in order 1..5.
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(train.label(i), i % 10);
    EXPECT_EQ(train.pixels(i)[kPlane + 5 * 32 + 9], pixel(i, 1, 5, 9));
  }
}

// Whether `out` is the source image shifted by (dy, dx) with zero padding,
// optionally mirrored.
bool matches_crop(const std::vector<float>& out, const CifarDataset& d, int index, int dy, int dx, bool flip) {
  const Normalization n = d.normalization();
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        const int sy = y + dy, sx = (flip ? 31 - x : x) + dx;
        const std::uint8_t p = (sy < 0 || sy >= 32 || sx < 0 || sx >= 32) ? 0 : d.pixels(index)[c * kPlane + sy * 32 + sx];
        if (std::fabs(out[c * kPlane + y * 32 + x] - normalised(p, n, c)) > 1e-5f) return false;
      }
  return true;
}

TEST(Cifar, TrainAugmentationIsPaddedCropAndFlipDeterministicPerSeed) {
  TempDir dir;
  write_cifar10(dir);
  const CifarDataset train(CifarKind::cifar10, dir.path(), Split::train);
  std::vector<float> a(3 * kPlane), b(3 * kPlane);
  std::set<std::tuple<int, int, bool>> seen;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    std::int32_t la = 0, lb = 0;
    Rng ra(sample_seed(seed, 0, 4)), rb(sample_seed(seed, 0, 4));
    train.read(4, a.data(), la, ra);
    train.read(4, b.data(), lb, rb);
    ASSERT_EQ(a, b) << "same seed, different augmentation";
    EXPECT_EQ(la, 4);
    bool found = false;
    for (int dy = -4; dy <= 4 && !found; ++dy)
      for (int dx = -4; dx <= 4 && !found; ++dx)
        for (bool flip : {false, true})
          if (!found && matches_crop(a, train, 4, dy, dx, flip)) {
            found = true;
            seen.emplace(dy, dx, flip);
          }
    ASSERT_TRUE(found) << "seed " << seed << " is not a padded crop";
  }
  EXPECT_GT(seen.size(), 30u);  // 162 possibilities, 60 draws
  bool flipped = false, plain = false;
  for (const auto& [dy, dx, flip] : seen) (flip ? flipped : plain) = true;
  EXPECT_TRUE(flipped && plain);
}

TEST(Cifar, Cifar100FineByDefaultCoarseOnRequest) {
  TempDir dir;
  auto labels = [](int r) { return std::vector<int>{r % 20, (r * 7) % 100}; };
  write_bytes(dir / "train.bin", records(0, 30, 2, labels));
  write_bytes(dir / "test.bin", records(50, 5, 2, labels));

  const CifarDataset fine(CifarKind::cifar100, dir.path(), Split::train);
  EXPECT_EQ(fine.classes(), 100);
  EXPECT_EQ(fine.size(), 30);
  DatasetOptions coarse_opt;
  coarse_opt.cifar100_coarse = true;
  const CifarDataset coarse(CifarKind::cifar100, dir.path(), Split::test, coarse_opt);
  EXPECT_EQ(coarse.classes(), 20);
  EXPECT_EQ(coarse.size(), 5);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(fine.label(i), (i * 7) % 100);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(coarse.label(i), (50 + i) % 20);

  std::vector<float> image(3 * kPlane);
  std::int32_t label = -1;
  Rng rng(3);
  ASSERT_TRUE(coarse.read(2, image.data(), label, rng));
  EXPECT_EQ(label, 52 % 20);
  EXPECT_NEAR(image[2 * kPlane + 31], normalised(pixel(52, 2, 0, 31), coarse.normalization(), 2), 1e-5f);
  EXPECT_FLOAT_EQ(coarse.normalization().mean[0], 0.5071f);
}

TEST(Cifar, MissingFolderNamesThePath) {
  TempDir dir;
  const auto missing = dir / "no_such_folder";
  testing::expect_dataset_error([&] { CifarDataset(CifarKind::cifar10, missing, Split::train); }, {missing.string(), "not found"});
  testing::expect_dataset_error([&] { make_dataset("cifar100", missing, Split::test); }, {missing.string()});
}

TEST(Cifar, MissingFileNamesWhichOne) {
  TempDir dir;
  write_cifar10(dir);
  std::filesystem::remove(dir / "data_batch_3.bin");
  testing::expect_dataset_error([&] { CifarDataset(CifarKind::cifar10, dir.path(), Split::train); },
               {(dir / "data_batch_3.bin").string(), "missing"});
  // The test split does not need the train files.
  EXPECT_EQ(CifarDataset(CifarKind::cifar10, dir.path(), Split::test).size(), 4);
  testing::expect_dataset_error([&] { CifarDataset(CifarKind::cifar100, dir.path(), Split::test); }, {(dir / "test.bin").string()});
}

TEST(Cifar, TruncatedFileIsMalformed) {
  TempDir dir;
  write_cifar10(dir);
  auto bytes = testing::read_bytes(dir / "test_batch.bin");
  bytes.resize(bytes.size() - 100);
  write_bytes(dir / "test_batch.bin", bytes);
  testing::expect_dataset_error([&] { CifarDataset(CifarKind::cifar10, dir.path(), Split::test); },
               {(dir / "test_batch.bin").string(), "3073-byte"});
  write_bytes(dir / "test_batch.bin", {});
  testing::expect_dataset_error([&] { CifarDataset(CifarKind::cifar10, dir.path(), Split::test); }, {(dir / "test_batch.bin").string()});
}

TEST(Cifar, LabelOutOfRangeNamesFileAndRecord) {
  TempDir dir;
  write_cifar10(dir);
  auto bytes = testing::read_bytes(dir / "data_batch_2.bin");
  bytes[2 * 3073] = 10;  // record 2's label byte
  write_bytes(dir / "data_batch_2.bin", bytes);
  testing::expect_dataset_error([&] { CifarDataset(CifarKind::cifar10, dir.path(), Split::train); },
               {(dir / "data_batch_2.bin").string(), "record 2", "label 10"});

  TempDir dir100;
  write_bytes(dir100 / "test.bin", records(0, 3, 2, [](int r) { return std::vector<int>{1, r == 1 ? 100 : 5}; }));
  testing::expect_dataset_error([&] { CifarDataset(CifarKind::cifar100, dir100.path(), Split::test); },
               {(dir100 / "test.bin").string(), "record 1", "fine label 100"});
}

TEST(Cifar, FactoryBuildsCifarAndRejectsUnknownNames) {
  TempDir dir;
  write_cifar10(dir);
  const auto d = make_dataset("cifar10", dir.path(), Split::test);
  EXPECT_EQ(d->size(), 4);
  EXPECT_NE(d->name().find("cifar10"), std::string::npos);
  DatasetOptions no_aug;
  no_aug.augment = false;
  EXPECT_FALSE(make_dataset("cifar10", dir.path(), Split::train, no_aug)->augments());
  testing::expect_dataset_error([&] { make_dataset("mnist", dir.path(), Split::train); },
               {"mnist", "generated", "cifar10", "cifar100", "imagenet", dir.path().string()});
}

}  // namespace
}  // namespace tidepool::datasets
