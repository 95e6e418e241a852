// The project's embedded default dataset: ten classes of drawn shapes,
// written as CIFAR-10 binary files the first time an image is read, so that
// training on it runs through the real CIFAR-10 loader
// (make_dataset("generated", dir, ...)). Its size, classes and labels are
// known without the files: a run that never reads an image (the sim
// device's) or that is refused before its first batch writes nothing.
//
// The class is the shape alone; everything else is random per image: the
// foreground and background colours (any hue, with enough contrast), the
// shape's position, size and aspect, a faint background gradient and pixel
// noise. Colour therefore says nothing about the class, and a network has to
// look at shape - yet the shapes differ enough at 32x32 for a small ResNet to
// pass 90% test accuracy within a few epochs.
//
// Everything comes from a fixed seed with integer arithmetic and IEEE-exact
// float operations (no trigonometry), so every machine writes the same bytes.
// Files: data_batch_1..5.bin (2,000 images each) and test_batch.bin (2,000),
// every file holding exactly 200 images of each class in shuffled order.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "datasets/dataset.h"

namespace tidepool::datasets {

inline constexpr std::int64_t kGeneratedImagesPerFile = 2000;
inline constexpr std::int64_t kGeneratedTrainFiles = 5;
inline constexpr std::int64_t kGeneratedClasses = 10;

inline constexpr std::array<std::string_view, kGeneratedClasses> kGeneratedClassNames = {
    "disk", "square", "triangle", "plus", "horizontal bars", "vertical bars", "ring", "diamond", "cross",
    "frame"};

// Writes the six files into `dir` (created if needed) unless each is
// already there with the right size. Each file is written to a temporary
// name and renamed into place, so a crash or a concurrent run never leaves a
// half-written file under the real name. Returns how many files were
// written. Throws DatasetError, naming the path, when the folder or a file
// cannot be written.
int ensure_generated_cifar10(const std::filesystem::path& dir);

// The labels of file `file` (0-4 the training files, 5 the test file), in
// the order the file holds them: what its records' label bytes say.
std::vector<std::uint8_t> generated_labels(std::int64_t file);

class CifarDataset;

// The generated dataset of one split, read from `dir`: its size, shape,
// classes, normalisation and labels come from its description; the files
// are written (ensure_generated_cifar10) and loaded the first time read()
// is called, once, whichever loader thread calls first.
class GeneratedDataset final : public Dataset {
 public:
  GeneratedDataset(std::filesystem::path dir, Split split, const DatasetOptions& options = {});
  ~GeneratedDataset() override;

  std::string name() const override;
  Split split() const override { return split_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  ImageShape image_shape() const override;
  std::int64_t classes() const override { return kGeneratedClasses; }
  Normalization normalization() const override;
  bool augments() const override { return augment_; }
  std::int32_t label(std::int64_t index) const override { return labels_[static_cast<std::size_t>(index)]; }
  bool read(std::int64_t index, float* image_chw, std::int32_t& label, Rng& rng) const override;
  // Whether the files have been written (or found) and loaded.
  bool loaded() const { return files_.load(std::memory_order_acquire) != nullptr; }

 private:
  const CifarDataset& files() const;
  std::filesystem::path dir_;
  Split split_;
  DatasetOptions options_;
  bool augment_;
  std::vector<std::uint8_t> labels_;
  mutable std::once_flag load_once_;
  mutable std::unique_ptr<CifarDataset> loaded_;
  mutable std::atomic<const CifarDataset*> files_{nullptr};
};

// Draws one 32x32 image of class `label` (0..9) from `seed` into `rgb_planes`
// (3072 bytes: R, G, B planes) - what the files hold, exposed for tests.
void render_generated_image(std::uint64_t seed, int label, std::uint8_t* rgb_planes);

}  // namespace tidepool::datasets
