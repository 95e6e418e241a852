// imagenet-shapes: ImageNet's shapes, sizes and classes with noise in
// them, made from nothing, the same bytes every time.
#include "datasets/imagenet_shapes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "datasets/loader.h"

namespace tidepool::datasets {
namespace {

std::vector<float> image(const Dataset& d, std::int64_t index, std::uint64_t rng_seed = 1) {
  std::vector<float> out(static_cast<std::size_t>(d.image_shape().elements()));
  std::int32_t label = -1;
  Rng rng(rng_seed);
  EXPECT_TRUE(d.read(index, out.data(), label, rng));
  EXPECT_EQ(label, d.label(index));
  return out;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ImageNetShapes, HasImageNetsShapesClassesAndSizesAndNeedsNoFiles) {
  const auto names = dataset_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "imagenet-shapes"), names.end());
  EXPECT_FALSE(reads_files("imagenet-shapes"));
  EXPECT_TRUE(reads_files("imagenet"));
  // No folder: the factory does not look at it.
  const auto train = make_dataset("imagenet-shapes", "/no/such/folder", Split::train);
  const auto test = make_dataset("imagenet-shapes", "", Split::test);
  EXPECT_EQ(train->image_shape(), (ImageShape{3, 224, 224}));
  EXPECT_EQ(test->image_shape(), (ImageShape{3, 224, 224}));
  EXPECT_EQ(train->classes(), 1000);
  EXPECT_EQ(train->size(), 1'281'167);
  EXPECT_EQ(test->size(), 50'000);
  EXPECT_EQ(train->split(), Split::train);
  EXPECT_FALSE(train->augments());
  EXPECT_NE(train->name().find("for timing and memory only"), std::string::npos) << train->name();
  // The side follows the option, as ImageNet's crop does.
  EXPECT_EQ(ImageNetShapesDataset(Split::train, {.image_size = 64}).image_shape(), (ImageShape{3, 64, 64}));
  EXPECT_THROW(ImageNetShapesDataset(Split::train, {.image_size = 0}), DatasetError);
}

TEST(ImageNetShapes, TheSameImageIsTheSameBytesWhateverTheRng) {
  const ImageNetShapesDataset a(Split::train), b(Split::train);
  for (std::int64_t index : {std::int64_t{0}, std::int64_t{12345}, a.size() - 1}) {
    SCOPED_TRACE(index);
    const std::vector<float> first = image(a, index, 1);
    EXPECT_TRUE(same_bytes(first, image(a, index, 2)));
    EXPECT_TRUE(same_bytes(first, image(b, index, 3)));
    EXPECT_EQ(a.label(index), b.label(index));
  }
}

TEST(ImageNetShapes, ImagesDifferAndLookLikeNormalisedPixelBytes) {
  const ImageNetShapesDataset train(Split::train), test(Split::test);
  std::vector<std::vector<float>> seen;
  for (std::int64_t index = 0; index < 8; ++index) seen.push_back(image(train, index));
  seen.push_back(image(test, 0));  // the splits are different images
  for (std::size_t i = 0; i < seen.size(); ++i)
    for (std::size_t j = i + 1; j < seen.size(); ++j) EXPECT_FALSE(same_bytes(seen[i], seen[j])) << i << ", " << j;

  // Every plane holds bytes 0..255 normalised with ImageNet's constants,
  // spread over the whole range.
  const Normalization n = train.normalization();
  const std::int64_t plane = 224 * 224;
  for (int c = 0; c < 3; ++c) {
    const float* p = seen[0].data() + c * plane;
    const auto [lo, hi] = std::minmax_element(p, p + plane);
    EXPECT_FLOAT_EQ(*lo, -n.mean[c] / n.stddev[c]) << "plane " << c;
    EXPECT_FLOAT_EQ(*hi, (1.0f - n.mean[c]) / n.stddev[c]) << "plane " << c;
    std::set<float> values(p, p + plane);
    EXPECT_EQ(values.size(), 256u) << "plane " << c;
  }
}

TEST(ImageNetShapes, LabelsCoverTheThousandClasses) {
  const ImageNetShapesDataset train(Split::train);
  std::set<std::int32_t> classes;
  for (std::int64_t index = 0; index < 20000; ++index) {
    const std::int32_t label = train.label(index);
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 1000);
    classes.insert(label);
  }
  EXPECT_EQ(classes.size(), 1000u);  // 20 draws per class on average: every one is hit
}

TEST(ImageNetShapes, TrainsThroughTheBatchLoader) {
  const ImageNetShapesDataset train(Split::train, {.image_size = 32});  // small slots; the same code
  LoaderOptions options = LoaderOptions::training(16, 7);
  options.workers = 2;
  std::vector<std::byte> memory(BatchLoader::required_bytes(train, options));
  BatchLoader loader(train, memory, options);
  EXPECT_EQ(loader.batches_per_epoch(), 1'281'167 / 16);
  loader.start_epoch(0);
  const auto batch = loader.next();
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->size, 16);
  for (std::int64_t i = 0; i < batch->size; ++i) {
    const std::int64_t index = batch->samples[static_cast<std::size_t>(i)];
    EXPECT_EQ(batch->labels[i], train.label(index));
    const std::vector<float> expected = image(train, index);
    EXPECT_EQ(std::memcmp(batch->images + i * 3 * 32 * 32, expected.data(), expected.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace tidepool::datasets
