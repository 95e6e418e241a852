#include "datasets/fashion_mnist.h"

#include <algorithm>
#include <cstring>
#include <system_error>

#include "datasets/cifar.h"
#include "datasets/idx.h"

namespace tidepool::datasets {
namespace fs = std::filesystem;
namespace {

const std::string kInstallHint =
    "install Debian's package dataset-fashion-mnist (apt-get install dataset-fashion-mnist), which puts the four "
    "files in " +
    std::string(FashionMnistDataset::kPackageFolder) + ", or pass --data DIR";

std::string shape_text(const IdxArray& a) {
  std::string s;
  for (std::size_t d = 0; d < a.dims.size(); ++d) {
    if (d) s += 'x';
    s += std::to_string(a.dims[d]);
  }
  return s;
}

// `name` (gzipped) in `dir`, or the same name without .gz.
fs::path find_file(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  const fs::path gz = dir / name;
  if (fs::is_regular_file(gz, ec)) return gz;
  const fs::path plain = dir / fs::path(name).stem();
  if (fs::is_regular_file(plain, ec)) return plain;
  throw DatasetError("fashion-mnist: file missing: " + gz.string() + " (or " + plain.filename().string() +
                     " uncompressed); " + kInstallHint);
}

}  // namespace

std::vector<std::string> FashionMnistDataset::file_names(Split split) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  return {prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz"};
}

Normalization FashionMnistDataset::normalization() const {
  // The 28x28 training images' mean and standard deviation, in [0, 1] units.
  constexpr float kMean = 0.2860f, kStd = 0.3530f;
  return {{kMean, kMean, kMean}, {kStd, kStd, kStd}};
}

FashionMnistDataset::FashionMnistDataset(fs::path dir, Split split, const DatasetOptions& options)
    : dir_(std::move(dir)), split_(split), augment_(options.augment.value_or(split == Split::train)) {
  std::error_code ec;
  if (!fs::exists(dir_, ec)) throw DatasetError("fashion-mnist folder not found: " + dir_.string() + "; " + kInstallHint);
  require_directory(dir_, "fashion-mnist");

  // Find both files before reading either, so a missing labels file is
  // reported without first decompressing 47 MB of images.
  const auto names = file_names(split_);
  const fs::path images_path = find_file(dir_, names[0]);
  const fs::path labels_path = find_file(dir_, names[1]);

  const IdxArray images = read_idx_file(images_path);
  if (images.dims.size() != 3 || images.dims[1] != kSourceSide || images.dims[2] != kSourceSide)
    throw DatasetError("fashion-mnist: " + images_path.string() + " holds an array of " + shape_text(images) +
                       ", not N images of 28x28");
  const IdxArray labels = read_idx_file(labels_path);
  if (labels.dims.size() != 1)
    throw DatasetError("fashion-mnist: " + labels_path.string() + " holds an array of " + shape_text(labels) +
                       ", not a list of labels");
  if (labels.dims[0] != images.dims[0])
    throw DatasetError("fashion-mnist: " + labels_path.string() + " has " + std::to_string(labels.dims[0]) +
                       " labels for the " + std::to_string(images.dims[0]) + " images of " + images_path.string());
  if (images.dims[0] == 0) throw DatasetError("fashion-mnist: " + images_path.string() + " holds no images");
  const auto bad = std::find_if(labels.data.begin(), labels.data.end(), [](std::uint8_t l) { return l >= kClasses; });
  if (bad != labels.data.end())
    throw DatasetError("fashion-mnist: " + labels_path.string() + ": label " + std::to_string(*bad) + " of image " +
                       std::to_string(bad - labels.data.begin()) + " is out of range (10 classes)");
  labels_ = labels.data;

  // Centred on a black 32x32 canvas.
  const std::int64_t n = images.dims[0];
  constexpr std::int64_t border = (kSide - kSourceSide) / 2;
  padded_.assign(static_cast<std::size_t>(n * kSide * kSide), 0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t y = 0; y < kSourceSide; ++y)
      std::memcpy(padded_.data() + (i * kSide + y + border) * kSide + border,
                  images.data.data() + (i * kSourceSide + y) * kSourceSide, kSourceSide);
}

std::string FashionMnistDataset::name() const {
  return "fashion-mnist (" + std::string(to_string(split_)) + ", " + dir_.string() + ")";
}

bool FashionMnistDataset::read(std::int64_t index, float* image_chw, std::int32_t& label_out, Rng& rng) const {
  label_out = label(index);
  const CropFlip t = augment_ ? CropFlip::draw(rng, kPad) : CropFlip{};
  const Normalization n = normalization();
  const float scale = 1.0f / (255.0f * n.stddev[0]);
  const float bias = -n.mean[0] / n.stddev[0];
  constexpr std::int64_t plane = kSide * kSide;
  crop_flip_plane(pixels(index), kSide, t, scale, bias, image_chw);
  std::copy(image_chw, image_chw + plane, image_chw + plane);
  std::copy(image_chw, image_chw + plane, image_chw + 2 * plane);
  return true;
}

}  // namespace tidepool::datasets
