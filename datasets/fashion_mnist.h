// Fashion-MNIST (Zalando): 70,000 28x28 grey images of clothing in ten
// classes, 60,000 train and 10,000 test, as IDX files (datasets/idx.h):
//
//   train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz   (train)
//   t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz    (test)
//
// each gzipped as published, or plain (the same names without .gz). Debian's
// package dataset-fashion-mnist installs the gzipped files in
// /usr/share/datasets/fashion-mnist, the default folder.
//
// What the network sees: every model in the zoo takes CIFAR's 3x32x32, so an
// image is centred on a black 32x32 canvas (two pixels each side; the
// images' own background is black) and its grey is copied into all three
// planes. A network then trains on it unchanged: a first convolution over
// three equal planes computes what one over a single plane with the summed
// weights would, so nothing is lost but that layer's extra input work (under
// 1% of resnet20's). Padding rather than shrinking the models keeps VGG's
// five pools and every other 32x32 model working.
//
// Normalisation uses the usual statistics of the 28x28 training images
// (mean 0.2860, std 0.3530) on every plane. Training augmentation is the
// CIFAR recipe, the same code (datasets/cifar.h): a 32x32 window of the
// padded image zero-padded by 4 more pixels, then a mirror with probability
// 1/2 (clothes are near-symmetric left to right; mirrors are common in the
// published Fashion-MNIST results). Draws, in order: top offset, left offset, flip.
//
// Both files of a split are read and checked when the dataset is made: the
// images must be N x 28 x 28 bytes, the labels N bytes below 10, with the
// same N; a problem throws DatasetError naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace tidepool::datasets {

class FashionMnistDataset final : public Dataset {
 public:
  static constexpr std::int64_t kSourceSide = 28;
  static constexpr std::int64_t kSide = 32;  // after padding
  static constexpr std::int64_t kPad = 4;    // augmentation's crop padding
  static constexpr std::int64_t kClasses = 10;
  static constexpr const char* kPackageFolder = "/usr/share/datasets/fashion-mnist";

  FashionMnistDataset(std::filesystem::path dir, Split split, const DatasetOptions& options = {});

  std::string name() const override;
  Split split() const override { return split_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  ImageShape image_shape() const override { return {3, kSide, kSide}; }
  std::int64_t classes() const override { return kClasses; }
  Normalization normalization() const override;
  bool augments() const override { return augment_; }
  std::int32_t label(std::int64_t index) const override { return labels_[static_cast<std::size_t>(index)]; }
  bool read(std::int64_t index, float* image_chw, std::int32_t& label, Rng& rng) const override;

  // The padded 32x32 grey plane of a sample, for tests and viewers.
  const std::uint8_t* pixels(std::int64_t index) const { return padded_.data() + index * kSide * kSide; }

  // The split's two files: the gzipped name, or the plain one when only it
  // is there. Images first, then labels.
  static std::vector<std::string> file_names(Split split);  // gzipped names

 private:
  std::filesystem::path dir_;
  Split split_;
  bool augment_;
  std::vector<std::uint8_t> labels_;
  std::vector<std::uint8_t> padded_;  // size() planes of kSide x kSide
};

}  // namespace tidepool::datasets
