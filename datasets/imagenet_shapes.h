// "imagenet-shapes": ImageNet's shapes with nothing in them. For timing and
// memory only - the sim device at paper scale, or memory studies on a real
// device - since nothing can be learnt from it: every image is noise and
// every label is unrelated to its image.
//
// What it has of ImageNet is what a run's memory and time depend on: 3 x
// 224 x 224 float images (DatasetOptions::image_size sets the side, as for
// imagenet), 1000 classes, 1,281,167 training and 50,000 test images, so
// an epoch is as many iterations as ImageNet's, and ImageNet's
// normalisation constants.
//
// It reads no files (no folder is needed: the session refuses --data for
// it) and holds nothing per image: image `index` is a counter-based hash of
// (split, index, pixel) - each group of four pixels one 32-bit hash of the
// image's key and the group's number, a byte per pixel, normalised as a
// pixel byte would be - and its label is a hash of (split, index) mod 1000.
// So any image can be made by any thread in any order, the same bytes every
// time, with no allocation beyond the loader's own slots. Making one is a
// write of its 600 KB at memory speed: the hash costs less than the stores.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.h"

namespace tidepool::datasets {

class ImageNetShapesDataset final : public Dataset {
 public:
  static constexpr std::int64_t kTrainImages = 1'281'167;  // ILSVRC-2012's training set
  static constexpr std::int64_t kTestImages = 50'000;      // and its validation set
  static constexpr std::int64_t kClasses = 1000;

  explicit ImageNetShapesDataset(Split split, const DatasetOptions& options = {});

  std::string name() const override;  // "imagenet-shapes (train, noise: for timing and memory only)"
  Split split() const override { return split_; }
  std::int64_t size() const override { return split_ == Split::train ? kTrainImages : kTestImages; }
  ImageShape image_shape() const override { return {3, side_, side_}; }
  std::int64_t classes() const override { return kClasses; }
  Normalization normalization() const override { return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}; }
  // Noise needs no augmentation: every sample reads the same whatever the rng.
  bool augments() const override { return false; }
  std::int32_t label(std::int64_t index) const override;
  bool read(std::int64_t index, float* image_chw, std::int32_t& label, Rng& rng) const override;

 private:
  std::uint64_t key(std::int64_t index) const;

  Split split_;
  std::int64_t side_;
};

}  // namespace tidepool::datasets
