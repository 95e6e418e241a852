// ImageNet (ILSVRC-2012 classification) in its usual folder layout:
//
//   <dir>/train/<wnid>/*.JPEG            training images, one folder per class
//   <dir>/val/<wnid>/*.JPEG              validation, in class folders, or
//   <dir>/val/*.JPEG                     validation, flat, with a label file
//
// The class index is the wnid's position in sorted order - the order of the
// folders under train/ (what torchvision's ImageFolder does), or, when there
// is no train/, of <dir>/LOC_synset_mapping.txt (first token of each line),
// or of the class folders under val/.
//
// A flat val/ takes its labels from the first of these that exists:
//   val/LOC_val_solution.csv, <dir>/LOC_val_solution.csv  (the Kaggle layout)
//       "ImageId,PredictionString" header, then lines like
//       "ILSVRC2012_val_00008726,n02119789 255 142 454 329 ..." - the first
//       token of PredictionString is the image's wnid;
//   val/val_labels.txt, <dir>/val_labels.txt
//       lines "<filename> <class>", where <class> is a class index
//       (0-based, in the order above) or a wnid; blank lines and lines
//       starting with '#' are ignored. Caffe's val.txt has this form.
// Files are matched to labels by name without extension. An image with no
// label is an error (it would silently shrink the validation set); labels
// with no image are fine (a subset of val/).
//
// Images are .jpeg/.jpg/.png/.bmp (any case), decoded with OpenCV into RGB.
// Transforms follow torchvision's reference recipe:
//   train: RandomResizedCrop(S, scale=(0.08, 1), ratio=(3/4, 4/3)) then
//          RandomHorizontalFlip();
//   eval:  Resize(R) of the shorter side, then CenterCrop(S);
// with S = image_size (224) and R = resize_size (256 for S = 224). A file
// OpenCV cannot decode is skipped: read() returns false, a warning names it
// once on stderr and skipped() counts it; training never stops for one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "datasets/dataset.h"

namespace tidepool::datasets {

struct CropBox {
  std::int64_t top = 0, left = 0, height = 0, width = 0;
  friend bool operator==(const CropBox&, const CropBox&) = default;
};

// torchvision's RandomResizedCrop.get_params for an image of the given size:
// up to 10 tries of (area fraction in [scale_lo, scale_hi], log-uniform
// aspect ratio in [ratio_lo, ratio_hi]) that fit, then a centre crop clamped
// to the ratio range. Draws per try: area, ratio, and - on success - top, left.
CropBox random_resized_crop(std::int64_t height, std::int64_t width, Rng& rng, double scale_lo = 0.08,
                            double scale_hi = 1.0, double ratio_lo = 3.0 / 4.0, double ratio_hi = 4.0 / 3.0);

// The two label-file formats of a flat val/ (above).
enum class ValLabelFormat { kaggle_csv, list };

// Parses a label file's text into image stem (file name without extension)
// -> class index, the classes being `wnids` in order. Throws DatasetError
// naming `source` and the line for a malformed line, a class index out of
// range or an unknown wnid. From memory, so the fuzzers reach it.
std::unordered_map<std::string, std::int32_t> parse_val_labels(std::string_view text, ValLabelFormat format,
                                                              const std::vector<std::string>& wnids,
                                                              const std::string& source);

class ImageNetDataset final : public Dataset {
 public:
  ImageNetDataset(std::filesystem::path dir, Split split, const DatasetOptions& options = {});

  std::string name() const override;
  Split split() const override { return split_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  ImageShape image_shape() const override { return {3, image_size_, image_size_}; }
  std::int64_t classes() const override { return static_cast<std::int64_t>(wnids_.size()); }
  Normalization normalization() const override { return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}; }
  bool augments() const override { return augment_; }
  std::int32_t label(std::int64_t index) const override { return labels_[static_cast<std::size_t>(index)]; }
  bool read(std::int64_t index, float* image_chw, std::int32_t& label, Rng& rng) const override;
  std::int64_t skipped() const override;

  const std::vector<std::string>& wnids() const { return wnids_; }
  std::filesystem::path file(std::int64_t index) const { return root_ / files_[static_cast<std::size_t>(index)]; }
  // Where the labels came from: "class folders" or the label file's path.
  const std::string& label_source() const { return label_source_; }

 private:
  void find_classes();
  void scan_class_folders(const std::filesystem::path& root);
  void scan_flat_val();
  void note_unreadable(std::int64_t index) const;

  std::filesystem::path dir_;
  std::filesystem::path root_;  // dir_/train or dir_/val
  Split split_;
  bool augment_;
  std::int64_t image_size_;
  std::int64_t resize_size_;
  std::vector<std::string> wnids_;
  std::vector<std::string> files_;  // relative to root_, sorted within each class
  std::vector<std::int32_t> labels_;
  std::string label_source_;

  mutable std::mutex skip_mutex_;
  mutable std::unordered_set<std::int64_t> unreadable_;
};

}  // namespace tidepool::datasets
