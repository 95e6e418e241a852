#include "datasets/imagenet_shapes.h"

#include <algorithm>

namespace tidepool::datasets {
namespace {

// Keeps train and test images apart: the same index in the two splits is
// two unrelated images.
constexpr std::uint64_t kTrainSalt = 0x696D6167656E6574ull;  // "imagenet"
constexpr std::uint64_t kTestSalt = 0x7368617065732121ull;   // "shapes!!"
// Pixel bytes are made this many at a time on the stack, then converted:
// two plain loops the compiler vectorises (32-bit multiplies, byte to float).
constexpr int kChunk = 1024;

// Chris Wellons's lowbias32: a 32-bit integer hash whose output bits each
// depend on every input bit, in two multiplies (vectorisable, unlike a
// 64-bit one on x86-64's baseline).
inline std::uint32_t lowbias32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

}  // namespace

ImageNetShapesDataset::ImageNetShapesDataset(Split split, const DatasetOptions& options)
    : split_(split), side_(options.image_size) {
  if (side_ < 1) throw DatasetError("imagenet-shapes: the image size must be at least 1, not " + std::to_string(side_));
}

std::string ImageNetShapesDataset::name() const {
  return "imagenet-shapes (" + std::string(to_string(split_)) + ", noise: for timing and memory only)";
}

std::uint64_t ImageNetShapesDataset::key(std::int64_t index) const {
  return mix_seed(split_ == Split::train ? kTrainSalt : kTestSalt, static_cast<std::uint64_t>(index));
}

std::int32_t ImageNetShapesDataset::label(std::int64_t index) const {
  // Another word than the pixels' hashes use, so the label is not a
  // function of the image's first bytes.
  return static_cast<std::int32_t>(mix_seed(key(index), 1) % static_cast<std::uint64_t>(kClasses));
}

bool ImageNetShapesDataset::read(std::int64_t index, float* image_chw, std::int32_t& label_out, Rng&) const {
  label_out = label(index);
  // Group g of four pixels is lowbias32(lo + g * golden) ^ hi: a Weyl
  // sequence through the hash, then the key's other half, so two images
  // share bytes only if their whole 64-bit keys are equal. The four bytes
  // are taken in memory order, which vectorises (a big-endian machine makes
  // other noise, the same every time).
  const std::uint64_t k = key(index);
  const std::uint32_t lo = static_cast<std::uint32_t>(k), hi = static_cast<std::uint32_t>(k >> 32);
  const Normalization n = normalization();
  const std::int64_t plane = side_ * side_;
  std::uint32_t group = 0;
  alignas(64) std::uint32_t words[kChunk / 4];
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(words);
  for (int c = 0; c < 3; ++c) {
    // stored = (byte / 255 - mean) / std, as a decoded pixel would be.
    const float scale = 1.0f / (255.0f * n.stddev[c]), bias = -n.mean[c] / n.stddev[c];
    float* out = image_chw + c * plane;
    for (std::int64_t at = 0; at < plane; at += kChunk) {
      const int count = static_cast<int>(std::min<std::int64_t>(kChunk, plane - at));
      const int groups = (count + 3) / 4;
      for (int g = 0; g < groups; ++g)
        words[g] = lowbias32(lo + (group + static_cast<std::uint32_t>(g)) * 0x9E3779B9u) ^ hi;
      group += static_cast<std::uint32_t>(groups);
      for (int i = 0; i < count; ++i) out[at + i] = static_cast<float>(bytes[i]) * scale + bias;
    }
  }
  return true;
}

}  // namespace tidepool::datasets
