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
  const std::int64_t rec = record_bytes(kind_);
  std::error_code ec;
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
  if (ec) throw DatasetError(display_name_ + ": cannot stat " + path.string() + ": " + ec.message());
  if (bytes == 0 || bytes % rec != 0) {
    throw DatasetError(display_name_ + ": malformed file " + path.string() + ": " + std::to_string(bytes) +
                       " bytes is not a whole number of " + std::to_string(rec) + "-byte " +
                       kind_name(kind_) + " records (truncated, or not a " + kind_name(kind_) +
                       " binary file)");
  }

  const std::size_t at = records_.size();
  records_.resize(at + static_cast<std::size_t>(bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in || !in.read(reinterpret_cast<char*>(records_.data() + at), bytes)) {
    throw DatasetError(display_name_ + ": cannot read " + path.string());
  }

  // Both label bytes of CIFAR-100 are checked whichever is used: a record with
  // a bad coarse byte is a bad file either way.
  const std::uint8_t* base = records_.data() + at;
  const std::int64_t records = bytes / rec;
  for (std::int64_t r = 0; r < records; ++r) {
    const std::uint8_t* p = base + r * rec;
    const int first = p[0];
    const int limit0 = kind_ == CifarKind::cifar10 ? 10 : 20;
    int bad_value = -1, bad_limit = 0;
    const char* what = kind_ == CifarKind::cifar10 ? "label" : "coarse label";
    if (first >= limit0) {
      bad_value = first;
      bad_limit = limit0;
    } else if (kind_ == CifarKind::cifar100 && p[1] >= 100) {
      bad_value = p[1];
      bad_limit = 100;
      what = "fine label";
    }
    if (bad_value >= 0) {
      throw DatasetError(display_name_ + ": malformed file " + path.string() + ": record " +
                         std::to_string(r) + " has " + what + " " + std::to_string(bad_value) +
                         " (must be below " + std::to_string(bad_limit) + ")");
    }
  }
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

bool CifarDataset::read(std::int64_t index, float* image_chw, std::int32_t& label_out, Rng& rng) const {
  label_out = label(index);
  const std::uint8_t* src = pixels(index);

  std::int64_t dy = 0, dx = 0;
  bool flip = false;
  if (augment_) {
    dy = rng.between(0, 2 * kPad) - kPad;
    dx = rng.between(0, 2 * kPad) - kPad;
    flip = rng.coin();
  }

  for (int c = 0; c < 3; ++c) {
    const float scale = 1.0f / (255.0f * norm_.stddev[c]);
    const float bias = -norm_.mean[c] / norm_.stddev[c];  // what a black (padding) pixel becomes
    const std::uint8_t* plane = src + c * kSide * kSide;
    float* out = image_chw + c * kSide * kSide;
    for (std::int64_t y = 0; y < kSide; ++y, out += kSide) {
      const std::int64_t sy = y + dy;
      if (sy < 0 || sy >= kSide) {
        std::fill(out, out + kSide, bias);
        continue;
      }
      const std::uint8_t* row = plane + sy * kSide;
      if (!flip && dx == 0) {
        for (std::int64_t x = 0; x < kSide; ++x) out[x] = static_cast<float>(row[x]) * scale + bias;
        continue;
      }
      // The crop window comes first and the mirror is applied to it, as in
      // torchvision: output column x shows window column (31 - x).
      for (std::int64_t x = 0; x < kSide; ++x) {
        const std::int64_t sx = (flip ? kSide - 1 - x : x) + dx;
        out[x] = (sx < 0 || sx >= kSide) ? bias : static_cast<float>(row[sx]) * scale + bias;
      }
    }
  }
  return true;
}

}  // namespace tidepool::datasets
