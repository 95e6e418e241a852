#include "datasets/imagenet.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <iostream>
#include <sstream>
#include <system_error>
#include <unordered_map>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace tidepool::datasets {
namespace fs = std::filesystem;
namespace {

bool is_image(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpeg" || ext == ".jpg" || ext == ".png" || ext == ".bmp";
}

bool hidden(const fs::path& p) { return !p.filename().empty() && p.filename().string()[0] == '.'; }

std::vector<std::string> sorted_subfolders(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec) && !hidden(e.path())) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Image files directly in `dir`, sorted by name: directory order is
// filesystem-dependent and the sample order must not be.
std::vector<std::string> sorted_images(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && !hidden(e.path()) && is_image(e.path())) {
      out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Python's round() (half to even) under the default rounding mode, as
// torchvision computes crop sizes and offsets with it.
std::int64_t py_round(double v) { return static_cast<std::int64_t>(std::nearbyint(v)); }

// Shrinking uses pixel-area averaging, OpenCV's closest match to torchvision's
// antialiased bilinear downscaling; enlarging uses bilinear.
void resize_to(const cv::Mat& src, cv::Mat& dst, int width, int height) {
  const bool shrink = width <= src.cols && height <= src.rows;
  cv::resize(src, dst, cv::Size(width, height), 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
}

}  // namespace

CropBox random_resized_crop(std::int64_t height, std::int64_t width, Rng& rng, double scale_lo,
                            double scale_hi, double ratio_lo, double ratio_hi) {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(scale_lo, scale_hi);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const std::int64_t w = py_round(std::sqrt(target_area * aspect));
    const std::int64_t h = py_round(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const std::int64_t top = rng.between(0, height - h);
      const std::int64_t left = rng.between(0, width - w);
      return {top, left, h, w};
    }
  }
  // Fallback: the largest centred crop whose ratio is within range.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  std::int64_t w = width, h = height;
  if (in_ratio < ratio_lo) {
    h = py_round(static_cast<double>(w) / ratio_lo);
  } else if (in_ratio > ratio_hi) {
    w = py_round(static_cast<double>(h) * ratio_hi);
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

std::unordered_map<std::string, std::int32_t> parse_val_labels(std::string_view text, ValLabelFormat format,
                                                              const std::vector<std::string>& wnids,
                                                              const std::string& source) {
  std::unordered_map<std::string, std::int32_t> wnid_index;
  for (std::size_t i = 0; i < wnids.size(); ++i) wnid_index.emplace(wnids[i], static_cast<std::int32_t>(i));
  const bool csv = format == ValLabelFormat::kaggle_csv;

  std::unordered_map<std::string, std::int32_t> by_stem;
  std::istringstream in{std::string(text)};
  std::string line;
  for (std::int64_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string name, cls;
    if (csv) {
      const auto comma = line.find(',');
      if (line_no == 1 && line.rfind("ImageId", 0) == 0) continue;  // header
      if (line.empty()) continue;
      if (comma == std::string::npos) {
        throw DatasetError("imagenet: malformed line " + std::to_string(line_no) + " in " +
                           source + " (expected ImageId,PredictionString)");
      }
      name = line.substr(0, comma);
      std::istringstream(line.substr(comma + 1)) >> cls;
    } else {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream(line) >> name >> cls;
      if (name.empty()) continue;  // whitespace-only line
    }
    if (cls.empty()) {
      throw DatasetError("imagenet: line " + std::to_string(line_no) + " of " + source +
                         " has no class for '" + name + "'");
    }
    std::int64_t label = -1;
    if (all_digits(cls)) {
      label = cls.size() <= 9 ? std::stoll(cls) : -1;
      if (label < 0 || label >= static_cast<std::int64_t>(wnids.size())) {
        throw DatasetError("imagenet: line " + std::to_string(line_no) + " of " + source +
                           ": class index " + cls + " out of range (" + std::to_string(wnids.size()) +
                           " classes)");
      }
    } else {
      const auto it = wnid_index.find(cls);
      if (it == wnid_index.end()) {
        throw DatasetError("imagenet: line " + std::to_string(line_no) + " of " + source +
                           ": unknown class '" + cls + "'");
      }
      label = it->second;
    }
    by_stem[fs::path(name).stem().string()] = static_cast<std::int32_t>(label);
  }
  return by_stem;
}

ImageNetDataset::ImageNetDataset(fs::path dir, Split split, const DatasetOptions& options)
    : dir_(std::move(dir)),
      root_(dir_ / (split == Split::train ? "train" : "val")),
      split_(split),
      augment_(options.augment.value_or(split == Split::train)),
      image_size_(options.image_size),
      resize_size_(options.resize_size > 0 ? options.resize_size : (options.image_size * 256 + 112) / 224) {
  if (image_size_ < 1 || resize_size_ < image_size_) {
    throw DatasetError("imagenet (" + dir_.string() + "): image_size " + std::to_string(image_size_) +
                       " and resize_size " + std::to_string(resize_size_) +
                       " must satisfy 1 <= image_size <= resize_size");
  }
  require_directory(dir_, "imagenet");
  require_directory(root_, std::string("imagenet ") + (split == Split::train ? "train" : "val"));
  find_classes();

  // A val/ holding image files directly is the flat layout; otherwise its
  // subfolders are classes.
  if (split_ == Split::test && !sorted_images(root_).empty()) {
    scan_flat_val();
  } else {
    scan_class_folders(root_);
    label_source_ = "class folders";
  }
  if (files_.empty()) {
    throw DatasetError("imagenet: no images (.jpeg/.jpg/.png/.bmp) found in " + root_.string() +
                       (split_ == Split::train ? "/<wnid>/" : ""));
  }
}

void ImageNetDataset::find_classes() {
  const fs::path train = dir_ / "train";
  std::error_code ec;
  if (fs::is_directory(train, ec)) {
    wnids_ = sorted_subfolders(train);
    if (wnids_.empty()) throw DatasetError("imagenet: no class folders (train/<wnid>/) in " + train.string());
    return;
  }
  const fs::path mapping = dir_ / "LOC_synset_mapping.txt";
  if (std::ifstream in(mapping); in) {
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string wnid;
      if (words >> wnid) wnids_.push_back(wnid);
    }
    std::sort(wnids_.begin(), wnids_.end());
    if (wnids_.empty()) throw DatasetError("imagenet: no classes listed in " + mapping.string());
    return;
  }
  wnids_ = sorted_subfolders(root_);
  if (wnids_.empty()) {
    throw DatasetError("imagenet: cannot tell the classes of " + dir_.string() +
                       ": no train/<wnid>/ folders, no LOC_synset_mapping.txt, and no class folders in " +
                       root_.string());
  }
}

void ImageNetDataset::scan_class_folders(const fs::path& root) {
  std::unordered_map<std::string, std::int32_t> index;
  for (std::size_t i = 0; i < wnids_.size(); ++i) index.emplace(wnids_[i], static_cast<std::int32_t>(i));
  for (const std::string& folder : sorted_subfolders(root)) {
    const auto it = index.find(folder);
    if (it == index.end()) {
      throw DatasetError("imagenet: class folder " + (root / folder).string() + " is not one of the " +
                         std::to_string(wnids_.size()) + " classes of " + dir_.string());
    }
    for (std::string& f : sorted_images(root / folder)) {
      files_.push_back(folder + "/" + f);
      labels_.push_back(it->second);
    }
  }
}

void ImageNetDataset::scan_flat_val() {
  const std::vector<fs::path> candidates = {root_ / "LOC_val_solution.csv", dir_ / "LOC_val_solution.csv",
                                            root_ / "val_labels.txt", dir_ / "val_labels.txt"};
  fs::path label_file;
  std::error_code ec;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c, ec)) {
      label_file = c;
      break;
    }
  }
  if (label_file.empty()) {
    std::string looked;
    for (const auto& c : candidates) looked += "\n  " + c.string();
    throw DatasetError("imagenet: " + root_.string() +
                       " holds images directly but has no label file; looked for:" + looked);
  }
  label_source_ = label_file.string();

  std::ifstream in(label_file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DatasetError("imagenet: cannot read " + label_file.string());
  const auto by_stem = parse_val_labels(text, label_file.extension() == ".csv" ? ValLabelFormat::kaggle_csv
                                                                               : ValLabelFormat::list,
                                        wnids_, label_file.string());

  for (std::string& f : sorted_images(root_)) {
    const auto it = by_stem.find(fs::path(f).stem().string());
    if (it == by_stem.end()) {
      throw DatasetError("imagenet: no label for " + (root_ / f).string() + " in " + label_file.string());
    }
    labels_.push_back(it->second);
    files_.push_back(std::move(f));
  }
}

std::string ImageNetDataset::name() const {
  return "imagenet (" + std::string(to_string(split_)) + ", " + dir_.string() + ")";
}

std::int64_t ImageNetDataset::skipped() const {
  std::lock_guard lock(skip_mutex_);
  return static_cast<std::int64_t>(unreadable_.size());
}

void ImageNetDataset::note_unreadable(std::int64_t index) const {
  std::lock_guard lock(skip_mutex_);
  // One warning per file, not one per epoch.
  if (unreadable_.insert(index).second) {
    std::cerr << "tidepool: warning: skipping unreadable image " << file(index).string() << " ("
              << unreadable_.size() << " skipped so far)\n";
  }
}

bool ImageNetDataset::read(std::int64_t index, float* image_chw, std::int32_t& label_out, Rng& rng) const {
  label_out = label(index);
  {
    // A file already known to be bad is not decoded again (and OpenCV does
    // not print its own complaint about it every epoch).
    std::lock_guard lock(skip_mutex_);
    if (unreadable_.count(index) != 0) return false;
  }
  // EXIF orientation is ignored, as PIL (and so torchvision) ignores it.
  const cv::Mat image = cv::imread(file(index).string(), cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  if (image.empty() || image.type() != CV_8UC3) {
    note_unreadable(index);
    return false;
  }

  const int side = static_cast<int>(image_size_);
  cv::Mat crop;
  bool flip = false;
  if (augment_) {
    const CropBox box = random_resized_crop(image.rows, image.cols, rng);
    const cv::Rect rect(static_cast<int>(box.left), static_cast<int>(box.top), static_cast<int>(box.width),
                        static_cast<int>(box.height));
    resize_to(image(rect), crop, side, side);
    flip = rng.coin();
  } else {
    // Shorter side to resize_size_; the longer side keeps the aspect ratio,
    // truncated as torchvision's Resize does. Then the centred square.
    const int r = static_cast<int>(resize_size_);
    int w = r, h = r;
    if (image.cols <= image.rows) {
      h = static_cast<int>(static_cast<std::int64_t>(r) * image.rows / image.cols);
    } else {
      w = static_cast<int>(static_cast<std::int64_t>(r) * image.cols / image.rows);
    }
    cv::Mat resized;
    resize_to(image, resized, w, h);
    const int top = static_cast<int>(py_round((h - side) / 2.0));
    const int left = static_cast<int>(py_round((w - side) / 2.0));
    crop = resized(cv::Rect(left, top, side, side));
  }

  // HWC BGR bytes -> CHW RGB floats: the channel swap is folded into this
  // copy rather than a separate cvtColor pass.
  const Normalization n = normalization();
  const std::int64_t plane = image_size_ * image_size_;
  for (int c = 0; c < 3; ++c) {
    const int src_c = 2 - c;
    const float scale = 1.0f / (255.0f * n.stddev[c]);
    const float bias = -n.mean[c] / n.stddev[c];
    float* out = image_chw + c * plane;
    for (int y = 0; y < side; ++y) {
      const std::uint8_t* row = crop.ptr<std::uint8_t>(y);
      for (int x = 0; x < side; ++x) {
        const int sx = flip ? side - 1 - x : x;
        out[y * side + x] = static_cast<float>(row[sx * 3 + src_c]) * scale + bias;
      }
    }
  }
  return true;
}

}  // namespace tidepool::datasets
