// The generated default dataset: its files, its balance, its determinism,
// and that colour alone does not give the class away.
#include "datasets/generated.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "datasets/cifar.h"
#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "testing/temp_dir.h"

namespace tidepool::datasets {
namespace {

using testing::TempDir;

constexpr std::uintmax_t kFileBytes = 2000 * 3073;
const char* const kFiles[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                              "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

// Generating takes a moment; the tests that only read share one copy.
class Generated : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    first_written_ = ensure_generated_cifar10(dir_->path());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static TempDir* dir_;
  static int first_written_;
};
TempDir* Generated::dir_ = nullptr;
int Generated::first_written_ = 0;

TEST_F(Generated, WritesSixCifar10FilesOnceAndLeavesNoTemporaries) {
  EXPECT_EQ(first_written_, 6);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_->path())) {
    ++entries;
    EXPECT_EQ(std::filesystem::file_size(e.path()), kFileBytes) << e.path();
  }
  EXPECT_EQ(entries, 6);
  for (const char* f : kFiles) EXPECT_TRUE(std::filesystem::exists(dir_->path() / f)) << f;
  EXPECT_EQ(ensure_generated_cifar10(dir_->path()), 0);  // already there
}

TEST_F(Generated, LoadsAsCifar10WithBalancedClasses) {
  const auto train = make_dataset("generated", dir_->path(), Split::train);
  const auto test = make_dataset("generated", dir_->path(), Split::test);
  EXPECT_EQ(train->size(), 10000);
  EXPECT_EQ(test->size(), 2000);
  EXPECT_EQ(train->classes(), 10);
  EXPECT_NE(train->name().find("generated"), std::string::npos);
  std::array<int, 10> train_count{}, test_count{};
  for (std::int64_t i = 0; i < train->size(); ++i) ++train_count[static_cast<std::size_t>(train->label(i))];
  for (std::int64_t i = 0; i < test->size(); ++i) ++test_count[static_cast<std::size_t>(test->label(i))];
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train_count[static_cast<std::size_t>(c)], 1000) << kGeneratedClassNames[static_cast<std::size_t>(c)];
    EXPECT_EQ(test_count[static_cast<std::size_t>(c)], 200) << kGeneratedClassNames[static_cast<std::size_t>(c)];
  }
  // Shuffled within a file, not 0, 1, 2, ... 9, 0, 1, ...
  int in_cycle = 0;
  for (std::int64_t i = 0; i < 100; ++i) in_cycle += train->label(i) == i % 10;
  EXPECT_LT(in_cycle, 50);
}

TEST_F(Generated, IsDeterministicAndRepairsABadFile) {
  TempDir other;
  std::filesystem::create_directories(other.path());
  // A truncated file is rewritten; the others (right size) are kept.
  for (const char* f : kFiles) std::filesystem::copy_file(dir_->path() / f, other / f);
  std::filesystem::resize_file(other / "data_batch_4.bin", 1000);
  EXPECT_EQ(ensure_generated_cifar10(other.path()), 1);
  for (const char* f : kFiles) {
    EXPECT_EQ(testing::read_bytes(other / f), testing::read_bytes(dir_->path() / f)) << f;
  }
  std::vector<std::uint8_t> a(3072), b(3072), c(3072);
  render_generated_image(42, 3, a.data());
  render_generated_image(42, 3, b.data());
  render_generated_image(43, 3, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST_F(Generated, ColourAloneDoesNotTellTheClass) {
  // Nearest class-mean on an image's average colour: with colours drawn
  // independently of the shape this stays near chance (10%).
  const CifarDataset train(CifarKind::cifar10, dir_->path(), Split::train);
  const CifarDataset test(CifarKind::cifar10, dir_->path(), Split::test);
  auto mean_rgb = [](const CifarDataset& d, std::int64_t i) {
    std::array<double, 3> m{};
    for (int c = 0; c < 3; ++c) {
      for (int p = 0; p < 1024; ++p) m[static_cast<std::size_t>(c)] += d.pixels(i)[c * 1024 + p];
      m[static_cast<std::size_t>(c)] /= 1024.0;
    }
    return m;
  };
  std::array<std::array<double, 3>, 10> centre{};
  std::array<int, 10> count{};
  for (std::int64_t i = 0; i < train.size(); ++i) {
    const auto m = mean_rgb(train, i);
    const auto l = static_cast<std::size_t>(train.label(i));
    for (int c = 0; c < 3; ++c) centre[l][static_cast<std::size_t>(c)] += m[static_cast<std::size_t>(c)];
    ++count[l];
  }
  for (std::size_t l = 0; l < 10; ++l)
    for (double& v : centre[l]) v /= count[l];
  int correct = 0;
  for (std::int64_t i = 0; i < test.size(); ++i) {
    const auto m = mean_rgb(test, i);
    std::size_t best = 0;
    double best_d = 1e300;
    for (std::size_t l = 0; l < 10; ++l) {
      double d = 0;
      for (std::size_t c = 0; c < 3; ++c) d += (m[c] - centre[l][c]) * (m[c] - centre[l][c]);
      if (d < best_d) best_d = d, best = l;
    }
    correct += best == static_cast<std::size_t>(test.label(i));
  }
  EXPECT_LT(correct, test.size() * 25 / 100) << "colour predicts the class";
}

TEST_F(Generated, TrainsThroughTheBatchLoader) {
  // End to end: generated files -> CIFAR-10 reader -> augmented batches.
  const auto train = make_dataset("generated", dir_->path(), Split::train);
  LoaderOptions opt = LoaderOptions::training(250, 7);
  opt.workers = 2;
  std::vector<std::byte> memory(BatchLoader::required_bytes(*train, opt));
  BatchLoader loader(*train, memory, opt);
  loader.start_epoch(0);
  std::array<int, 10> seen{};
  std::int64_t batches = 0;
  while (auto b = loader.next()) {
    ++batches;
    ASSERT_EQ(b->size, 250);
    for (std::int64_t i = 0; i < b->size; ++i) {
      ASSERT_EQ(b->labels[i], train->label(b->samples[static_cast<std::size_t>(i)]));
      ++seen[static_cast<std::size_t>(b->labels[i])];
    }
    // Normalised values stay within what bytes 0..255 can give.
    for (std::int64_t k = 0; k < b->size * 3072; k += 97) ASSERT_TRUE(std::isfinite(b->images[k]) && std::fabs(b->images[k]) < 3.0f);
  }
  EXPECT_EQ(batches, 40);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(seen[static_cast<std::size_t>(c)], 1000);
}

// Its size, classes and labels come from its description: nothing is
// written until an image is read (a sim run reads labels only), and the
// labels it knows are the ones the files then hold.
TEST(GeneratedDescription, WritesNothingUntilAnImageIsRead) {
  TempDir dir("generated-lazy");
  const auto folder = dir.path() / "data" / "generated";
  const auto train = make_dataset("generated", folder, Split::train);
  const auto test = make_dataset("generated", folder, Split::test);
  EXPECT_EQ(train->size(), 10000);
  EXPECT_EQ(test->size(), 2000);
  EXPECT_EQ(train->classes(), 10);
  EXPECT_EQ(train->image_shape(), (ImageShape{3, 32, 32}));
  EXPECT_EQ(train->name(), "generated (train, " + folder.string() + ")");
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < test->size(); ++i) labels.push_back(test->label(i));
  // Labels only, as the sim device's loaders ask: still nothing written.
  LoaderOptions opt = LoaderOptions::evaluation(100);
  opt.decode = false;
  std::vector<std::byte> memory(BatchLoader::required_bytes(*test, opt));
  {
    BatchLoader loader(*test, memory, opt);
    loader.start_epoch(0);
    while (loader.next()) {
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "data")) << "labels alone wrote the dataset";

  // The first image read writes the files, and the labels are theirs.
  std::vector<float> image(3 * 32 * 32);
  std::int32_t label = -1;
  Rng rng(1);
  ASSERT_TRUE(test->read(5, image.data(), label, rng));
  EXPECT_EQ(label, labels[5]);
  for (const char* f : kFiles) EXPECT_TRUE(std::filesystem::exists(folder / f)) << f;
  const CifarDataset files(CifarKind::cifar10, folder, Split::test);
  for (std::int64_t i = 0; i < files.size(); ++i) ASSERT_EQ(files.label(i), labels[static_cast<std::size_t>(i)]) << i;
}

}  // namespace
}  // namespace tidepool::datasets
