// Fashion-MNIST folders written here as IDX files (gzipped and plain), read
// back through the dataset: padding, channels, labels, augmentation, and
// every broken folder refused with the file's name. One test reads the
// installed Debian package, when it is there.
#include "datasets/fashion_mnist.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <initializer_list>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "datasets/dataset.h"
#include "testing/dataset_errors.h"
#include "testing/idx_files.h"
#include "testing/temp_dir.h"

namespace tidepool::datasets {
namespace {

using testing::fashion_pixel;
using testing::gzip_bytes;
using testing::idx_bytes;
using testing::TempDir;
using testing::write_bytes;

constexpr int kPlane = 32 * 32;

float normalised(std::uint8_t p) { return (static_cast<float>(p) / 255.0f - 0.2860f) / 0.3530f; }

// The padded 32x32 image's pixel (black outside the centred 28x28).
std::uint8_t padded(int image, int y, int x) {
  return (y < 2 || y >= 30 || x < 2 || x >= 30) ? 0 : fashion_pixel(image, y - 2, x - 2);
}

void expect_evaluation_images(const FashionMnistDataset& d, int first) {
  std::vector<float> image(3 * kPlane);
  for (int i = 0; i < d.size(); ++i) {
    std::int32_t label = -1;
    Rng rng(1);
    ASSERT_TRUE(d.read(i, image.data(), label, rng));
    EXPECT_EQ(label, ((first + i) * 3) % 10);
    EXPECT_EQ(d.label(i), label);
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x)
          ASSERT_NEAR(image[c * kPlane + y * 32 + x], normalised(padded(first + i, y, x)), 1e-5f)
              << "image " << i << " c" << c << " y" << y << " x" << x;
  }
}

TEST(FashionMnist, GzippedFilesArePaddedTo32AndGreyGoesToEveryPlane) {
  TempDir dir;
  testing::write_tiny_fashion_mnist(dir.path(), 6, 4, /*gz=*/true);
  const FashionMnistDataset test(dir.path(), Split::test);
  EXPECT_EQ(test.size(), 4);
  EXPECT_EQ(test.classes(), 10);
  EXPECT_EQ(test.image_shape(), (ImageShape{3, 32, 32}));
  EXPECT_FALSE(test.augments());
  EXPECT_EQ(test.name(), "fashion-mnist (test, " + dir.path().string() + ")");
  expect_evaluation_images(test, 100);

  const FashionMnistDataset train(dir.path(), Split::train);
  EXPECT_EQ(train.size(), 6);
  EXPECT_TRUE(train.augments());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(train.label(i), (i * 3) % 10);
    EXPECT_EQ(train.pixels(i)[0], 0);
    EXPECT_EQ(train.pixels(i)[(2 + 5) * 32 + 2 + 9], fashion_pixel(i, 5, 9));
  }
}

TEST(FashionMnist, PlainFilesAreReadTooAndMakeDatasetKnowsTheName) {
  TempDir dir;
  testing::write_tiny_fashion_mnist(dir.path(), 6, 4, /*gz=*/false);
  const auto test = make_dataset("fashion-mnist", dir.path(), Split::test);
  ASSERT_EQ(test->size(), 4);
  expect_evaluation_images(dynamic_cast<const FashionMnistDataset&>(*test), 100);
  EXPECT_EQ(default_data_dir("fashion-mnist"), std::filesystem::path("/usr/share/datasets/fashion-mnist"));
  EXPECT_EQ(default_data_dir("generated"), std::filesystem::path("data/generated"));
  EXPECT_TRUE(default_data_dir("cifar10").empty());
}

// Whether the first plane of `out` is the padded image seen through a
// window at (dy, dx) (black outside it), optionally mirrored.
bool matches_crop(const std::vector<float>& out, int image, int dy, int dx, bool flip) {
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) {
      const int sy = y + dy, sx = (flip ? 31 - x : x) + dx;
      const std::uint8_t p = (sy < 0 || sy >= 32 || sx < 0 || sx >= 32) ? 0 : padded(image, sy, sx);
      if (std::fabs(out[y * 32 + x] - normalised(p)) > 1e-5f) return false;
    }
  return true;
}

TEST(FashionMnist, TrainingAugmentationIsCifarsCropAndFlipOnEveryPlane) {
  TempDir dir;
  testing::write_tiny_fashion_mnist(dir.path(), 6, 4);
  const FashionMnistDataset train(dir.path(), Split::train);
  std::vector<float> a(3 * kPlane), b(3 * kPlane);
  std::set<std::tuple<int, int, bool>> seen;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    std::int32_t la = 0, lb = 0;
    Rng ra(sample_seed(seed, 0, 3)), rb(sample_seed(seed, 0, 3));
    train.read(3, a.data(), la, ra);
    train.read(3, b.data(), lb, rb);
    ASSERT_EQ(a, b) << "same seed, different augmentation";
    EXPECT_EQ(la, 9);
    for (int c = 1; c < 3; ++c)
      ASSERT_TRUE(std::equal(a.begin(), a.begin() + kPlane, a.begin() + c * kPlane)) << "plane " << c << " differs";
    bool found = false;
    for (int dy = -4; dy <= 4 && !found; ++dy)
      for (int dx = -4; dx <= 4 && !found; ++dx)
        for (bool flip : {false, true})
          if (!found && matches_crop(a, 3, dy, dx, flip)) {
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

TEST(FashionMnist, MissingFolderOrFileSaysToInstallThePackage) {
  TempDir dir;
  const auto missing = dir / "nowhere";
  testing::expect_dataset_error([&] { FashionMnistDataset(missing, Split::train); },
               {missing.string(), "not found", "dataset-fashion-mnist"});
  testing::write_tiny_fashion_mnist(dir.path());
  std::filesystem::remove(dir / "t10k-labels-idx1-ubyte.gz");
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::test); },
               {(dir / "t10k-labels-idx1-ubyte.gz").string(), "missing", "dataset-fashion-mnist"});
  // The train split does not need the test files.
  EXPECT_EQ(FashionMnistDataset(dir.path(), Split::train).size(), 6);
}

TEST(FashionMnist, MismatchedFilesAreRefusedByName) {
  TempDir dir;
  testing::write_tiny_fashion_mnist(dir.path(), 6, 4);
  const auto labels = dir / "train-labels-idx1-ubyte.gz";
  const auto images = dir / "train-images-idx3-ubyte.gz";

  write_bytes(labels, gzip_bytes(idx_bytes({5}, {0, 1, 2, 3, 4})));
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::train); },
               {labels.string(), "5 labels for the 6 images", images.string()});

  write_bytes(labels, gzip_bytes(idx_bytes({6}, {0, 1, 2, 10, 4, 5})));
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::train); },
               {labels.string(), "label 10 of image 3", "out of range"});

  // The images' file where the labels' should be.
  write_bytes(labels, gzip_bytes(idx_bytes({6, 28, 28}, std::vector<std::uint8_t>(6 * 784))));
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::train); }, {labels.string(), "6x28x28", "not a list of labels"});

  write_bytes(images, gzip_bytes(idx_bytes({6, 32, 32}, std::vector<std::uint8_t>(6 * 1024))));
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::train); }, {images.string(), "6x32x32", "28x28"});

  write_bytes(images, gzip_bytes(idx_bytes({0, 28, 28}, {})));
  write_bytes(labels, gzip_bytes(idx_bytes({0}, {})));
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::train); }, {images.string(), "no images"});
}

TEST(FashionMnist, CorruptOrTruncatedFileIsNamed) {
  TempDir dir;
  testing::write_tiny_fashion_mnist(dir.path(), 6, 4);
  const auto images = dir / "t10k-images-idx3-ubyte.gz";
  auto bytes = testing::read_bytes(images);
  bytes.resize(bytes.size() - 20);
  write_bytes(images, bytes);
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::test); }, {images.string(), "truncated"});
  bytes = testing::read_bytes(images);
  bytes[0] = 'P';  // neither gzip nor IDX
  write_bytes(images, bytes);
  testing::expect_dataset_error([&] { FashionMnistDataset(dir.path(), Split::test); }, {images.string(), "not an IDX file"});
}

// The dataset as Debian's dataset-fashion-mnist installs it: the published
// sizes, and the published balance of exactly 6,000 train and 1,000 test
// images per class.
TEST(FashionMnist, TheInstalledPackageReads) {
  const std::filesystem::path dir = FashionMnistDataset::kPackageFolder;
  if (!std::filesystem::exists(dir / "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (" << dir << ")";
  for (const auto& [split, size] : {std::pair{Split::train, 60000}, std::pair{Split::test, 10000}}) {
    const FashionMnistDataset d(dir, split);
    ASSERT_EQ(d.size(), size);
    std::array<int, 10> per_class{};
    for (int i = 0; i < d.size(); ++i) ++per_class[static_cast<std::size_t>(d.label(i))];
    for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[static_cast<std::size_t>(c)], size / 10) << "class " << c;
    // Padding is black, and the images are not: the centre holds ink.
    long border = 0, centre = 0;
    for (int i = 0; i < 100; ++i)
      for (int k = 0; k < 32; ++k) {
        border += d.pixels(i)[k] + d.pixels(i)[31 * 32 + k] + d.pixels(i)[k * 32] + d.pixels(i)[k * 32 + 31];
        centre += d.pixels(i)[16 * 32 + k];
      }
    EXPECT_EQ(border, 0);
    EXPECT_GT(centre, 0);
  }
}

}  // namespace
}  // namespace tidepool::datasets
