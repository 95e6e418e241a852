#include "datasets/cifar.h"

#include <algorithm>
#include <fstream>
#include <system_error>

namespace tidepool::datasets {
namespace {

const char* kind_name(CifarKind kind) { return kind == CifarKind::cifar10 ? "cifar10" : "cifar100"; }

}  // namespace

std::vector<std::string> CifarDataset::file_names(CifarKind kind, Split split) {
  if (kind == CifarKind::cifar100) return {split == Split::train ? "train.bin" : "test.bin"};
  if (split == Split::test) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
          "data_batch_5.bin"};
}

Normalization CifarDataset::standard_normalization(CifarKind kind) {
  // The per-channel statistics of each training set, as used by the usual
  // reference implementations.
  if (kind == CifarKind::cifar10) return {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  return {{0.5071f, 0.4865f, 0.4409f}, {0.2673f, 0.2564f, 0.2762f}};
}

CifarDataset::CifarDataset(CifarKind kind, std::filesystem::path dir, Split split,
                           const DatasetOptions& options, std::string display_name)
    : kind_(kind),
      dir_(std::move(dir)),
      split_(split),
      display_name_(display_name.empty() ? kind_name(kind) : std::move(display_name)),
      augment_(options.augment.value_or(split == Split::train)),
      classes_(kind == CifarKind::cifar10 ? 10 : (options.cifar100_coarse ? 20 : 100)),
      // CIFAR-100 records start with the coarse byte, then the fine byte.
      label_offset_(kind == CifarKind::cifar100 && !options.cifar100_coarse ? 1 : 0),
      norm_(standard_normalization(kind)) {
  require_directory(dir_, display_name_);

  const auto names = file_names(kind_, split_);
  // Check every file is there before reading any, so that a missing
  // data_batch_5.bin is reported without first reading 120 MB.
  std::uintmax_t total = 0;
  for (const auto& n : names) {
    const auto path = dir_ / n;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      throw DatasetError(display_name_ + ": file missing: " + path.string() + " (a " +
                         kind_name(kind_) + " " + std::string(to_string(split_)) + " split needs " +
                         std::to_string(names.size()) + " file(s) in " + dir_.string() + ")");
    }
    const auto bytes = std::filesystem::file_size(path, ec);
    if (!ec) total += bytes;
  }
  records_.reserve(total);
  for (const auto& n : names) load_file(dir_ / n);
  count_ = static_cast<std::int64_t>(records_.size()) / record_bytes(kind_);
}

void CifarDataset::load_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
  if (ec) throw DatasetError(display_name_ + ": cannot stat " + path.string() + ": " + ec.message());
  const std::size_t at = records_.size();
  records_.resize(at + static_cast<std::size_t>(bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in || !in.read(reinterpret_cast<char*>(records_.data() + at), bytes)) {
    throw DatasetError(display_name_ + ": cannot read " + path.string());
  }
  check_records(kind_, std::span(records_).subspan(at), path.string(), display_name_);
}

std::int64_t CifarDataset::check_records(CifarKind kind, std::span<const std::uint8_t> bytes, const std::string& file,
                                         const std::string& what) {
  const std::int64_t rec = record_bytes(kind);
  const auto size = static_cast<std::int64_t>(bytes.size());
  if (size == 0 || size % rec != 0) {
    throw DatasetError(what + ": malformed file " + file + ": " + std::to_string(size) +
                       " bytes is not a whole number of " + std::to_string(rec) + "-byte " + kind_name(kind) +
                       " records (truncated, or not a " + kind_name(kind) + " binary file)");
  }
  // Both label bytes of CIFAR-100 are checked whichever is used: a record with
  // a bad coarse byte is a bad file either way.
  const std::int64_t records = size / rec;
  for (std::int64_t r = 0; r < records; ++r) {
    const std::uint8_t* p = bytes.data() + r * rec;
    const int first = p[0];
    const int limit0 = kind == CifarKind::cifar10 ? 10 : 20;
    int bad_value = -1, bad_limit = 0;
    const char* label = kind == CifarKind::cifar10 ? "label" : "coarse label";
    if (first >= limit0) {
      bad_value = first;
      bad_limit = limit0;
    } else if (kind == CifarKind::cifar100 && p[1] >= 100) {
      bad_value = p[1];
      bad_limit = 100;
      label = "fine label";
    }
    if (bad_value >= 0) {
      throw DatasetError(what + ": malformed file " + file + ": record " + std::to_string(r) + " has " + label + " " +
                         std::to_string(bad_value) + " (must be below " + std::to_string(bad_limit) + ")");
    }
  }
  return records;
}

std::string CifarDataset::name() const {
  return display_name_ + " (" + std::string(to_string(split_)) + ", " + dir_.string() + ")";
}

const std::uint8_t* CifarDataset::pixels(std::int64_t index) const {
  return records_.data() + index * record_bytes(kind_) + label_bytes(kind_);
}

std::int32_t CifarDataset::label(std::int64_t index) const {
  return records_[static_cast<std::size_t>(index * record_bytes(kind_) + label_offset_)];
}

CropFlip CropFlip::draw(Rng& rng, std::int64_t pad) {
  CropFlip t;
  t.dy = rng.between(0, 2 * pad) - pad;
  t.dx = rng.between(0, 2 * pad) - pad;
  t.flip = rng.coin();
  return t;
}

void crop_flip_plane(const std::uint8_t* plane, std::int64_t side, const CropFlip& t, float scale, float bias,
                     float* out) {
  for (std::int64_t y = 0; y < side; ++y, out += side) {
    const std::int64_t sy = y + t.dy;
    if (sy < 0 || sy >= side) {
      std::fill(out, out + side, bias);  // bias is what a black (padding) pixel becomes
      continue;
    }
    const std::uint8_t* row = plane + sy * side;
    if (!t.flip && t.dx == 0) {
      for (std::int64_t x = 0; x < side; ++x) out[x] = static_cast<float>(row[x]) * scale + bias;
      continue;
    }
    // The crop window comes first and the mirror is applied to it, as in
    // torchvision: output column x shows window column (side - 1 - x).
    for (std::int64_t x = 0; x < side; ++x) {
      const std::int64_t sx = (t.flip ? side - 1 - x : x) + t.dx;
      out[x] = (sx < 0 || sx >= side) ? bias : static_cast<float>(row[sx]) * scale + bias;
    }
  }
}

bool CifarDataset::read(std::int64_t index, float* image_chw, std::int32_t& label_out, Rng& rng) const {
  label_out = label(index);
  const std::uint8_t* src = pixels(index);
  const CropFlip t = augment_ ? CropFlip::draw(rng, kPad) : CropFlip{};
  for (int c = 0; c < 3; ++c) {
    const float scale = 1.0f / (255.0f * norm_.stddev[c]);
    const float bias = -norm_.mean[c] / norm_.stddev[c];
    crop_flip_plane(src + c * kSide * kSide, kSide, t, scale, bias, image_chw + c * kSide * kSide);
  }
  return true;
}

}  // namespace tidepool::datasets
