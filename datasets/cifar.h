// CIFAR-10 and CIFAR-100 in their binary distributions (one class, since the
// two differ only in file names and the number of label bytes):
//
//   CIFAR-10:  data_batch_1.bin .. data_batch_5.bin (train), test_batch.bin (test);
//              each record = 1 label byte (0..9) + 3072 pixel bytes.
//   CIFAR-100: train.bin (train), test.bin (test);
//              each record = 1 coarse label byte (0..19) + 1 fine label byte
//              (0..99) + 3072 pixel bytes.
//
// Pixels are three 32x32 planes, R then G then B, rows top to bottom - the
// CHW layout the network wants, so reading a sample is a per-plane copy.
//
// The split's files are read into memory once (about 150 MB for CIFAR-10
// train) and every record is checked on load, so a bad file fails at startup
// with its name and record index rather than mid-training.
//
// Training augmentation is the standard CIFAR recipe (torchvision's
// RandomCrop(32, padding=4) then RandomHorizontalFlip()): a 32x32 window of
// the image zero-padded by 4 pixels on every side, then a mirror with
// probability 1/2. The padding is black in pixel space, as torchvision pads
// before normalising. Draws, in order: top offset, left offset, flip.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace tidepool::datasets {

enum class CifarKind { cifar10, cifar100 };

// One sample's draws of the augmentation above (none: the identity).
struct CropFlip {
  std::int64_t dy = 0, dx = 0;  // the window's offset from the image, each in [-pad, pad]
  bool flip = false;
  static CropFlip draw(Rng& rng, std::int64_t pad);
};

// Writes one square plane of `side` x `side` pixel bytes, seen through the
// window `t` (black outside the image) and mirrored, as normalised floats
// (pixel * scale + bias). Shared with the Fashion-MNIST dataset, whose
// padded images take the same augmentation.
void crop_flip_plane(const std::uint8_t* plane, std::int64_t side, const CropFlip& t, float scale, float bias,
                     float* out);

class CifarDataset final : public Dataset {
 public:
  static constexpr std::int64_t kSide = 32;
  static constexpr std::int64_t kImageBytes = 3 * kSide * kSide;
  static constexpr std::int64_t kPad = 4;

  // Loads the files of `split` from `dir`. `display_name` replaces "cifar10"
  // in name() (the generated dataset is read through this class).
  CifarDataset(CifarKind kind, std::filesystem::path dir, Split split, const DatasetOptions& options = {},
               std::string display_name = {});

  std::string name() const override;
  Split split() const override { return split_; }
  std::int64_t size() const override { return count_; }
  ImageShape image_shape() const override { return {3, kSide, kSide}; }
  std::int64_t classes() const override { return classes_; }
  Normalization normalization() const override { return norm_; }
  bool augments() const override { return augment_; }
  std::int32_t label(std::int64_t index) const override;
  bool read(std::int64_t index, float* image_chw, std::int32_t& label, Rng& rng) const override;

  // The raw pixels of a record (R, G, B planes), for tests and viewers.
  const std::uint8_t* pixels(std::int64_t index) const;

  static std::vector<std::string> file_names(CifarKind kind, Split split);
  static std::int64_t label_bytes(CifarKind kind) { return kind == CifarKind::cifar10 ? 1 : 2; }
  static std::int64_t record_bytes(CifarKind kind) { return label_bytes(kind) + kImageBytes; }
  static Normalization standard_normalization(CifarKind kind);

  // Checks the contents of one file, `file` naming it in DatasetError
  // (prefixed with `what`, the dataset's name): a whole number of records,
  // at least one, every label byte in range. Returns the number of records.
  static std::int64_t check_records(CifarKind kind, std::span<const std::uint8_t> bytes, const std::string& file,
                                    const std::string& what);

 private:
  void load_file(const std::filesystem::path& path);

  CifarKind kind_;
  std::filesystem::path dir_;
  Split split_;
  std::string display_name_;
  bool augment_;
  std::int64_t classes_;
  std::int64_t label_offset_;  // which label byte of the record is used
  Normalization norm_;
  std::int64_t count_ = 0;
  std::vector<std::uint8_t> records_;  // the files' records, concatenated unchanged
};

}  // namespace tidepool::datasets
