#include "datasets/generated.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "datasets/cifar.h"
#include "datasets/dataset.h"

namespace tidepool::datasets {
namespace fs = std::filesystem;
namespace {

constexpr std::uint64_t kSeed = 0x7469646570006c31ull;  // changing it changes every file
constexpr std::int64_t kSide = CifarDataset::kSide;
constexpr std::int64_t kSub = 16;  // geometry is in 1/16-pixel fixed point

std::int64_t iabs(std::int64_t v) { return v < 0 ? -v : v; }

// Whether the point (dx, dy) from the shape's centre is inside shape `label`
// of half-extents (sx, sy). With u = dx/sx and v = dy/sy the shapes are simple
// regions of the unit square; each test below is that region's inequality
// multiplied through by sx*sy so it stays in exact integers.
bool inside(int label, std::int64_t dx, std::int64_t dy, std::int64_t sx, std::int64_t sy) {
  const std::int64_t ax = iabs(dx), ay = iabs(dy);
  const bool in_box = 10 * ax <= 9 * sx && 10 * ay <= 9 * sy;  // |u|, |v| <= 0.9
  switch (label) {
    case 0:  // disk: u^2 + v^2 <= 1
      return dx * dx * sy * sy + dy * dy * sx * sx <= sx * sx * sy * sy;
    case 1:  // square: |u|, |v| <= 0.8
      return 5 * ax <= 4 * sx && 5 * ay <= 4 * sy;
    case 2:  // triangle, apex up: -0.9 <= v <= 0.9 and |u| <= 0.95 (v + 0.9) / 1.8
      return 10 * dy >= -9 * sy && 10 * dy <= 9 * sy && 360 * ax * sy <= 190 * dy * sx + 171 * sx * sy;
    case 3:  // plus: two bars of half-width 0.25
      return (4 * ax <= sx && 20 * ay <= 19 * sy) || (4 * ay <= sy && 20 * ax <= 19 * sx);
    case 4:  // horizontal bars: bands 0, 2, 4 of five across v in [-0.9, 0.9]
      return in_box && ((100 * dy + 90 * sy) / (36 * sy)) % 2 == 0;
    case 5:  // vertical bars
      return in_box && ((100 * dx + 90 * sx) / (36 * sx)) % 2 == 0;
    case 6: {  // ring: 0.6 <= sqrt(u^2 + v^2) <= 1
      const std::int64_t r = 100 * (dx * dx * sy * sy + dy * dy * sx * sx), s = sx * sx * sy * sy;
      return r >= 36 * s && r <= 100 * s;
    }
    case 7:  // diamond: |u| + |v| <= 1
      return ax * sy + ay * sx <= sx * sy;
    case 8:  // cross: both diagonals, |u -+ v| <= 0.3
      return in_box && (10 * iabs(dx * sy - dy * sx) <= 3 * sx * sy || 10 * iabs(dx * sy + dy * sx) <= 3 * sx * sy);
    default:  // frame: the square |u|, |v| <= 0.9 less the square |u|, |v| < 0.55
      return in_box && (20 * ax >= 11 * sx || 20 * ay >= 11 * sy);
  }
}

std::uint8_t clamp_byte(std::int64_t v) { return static_cast<std::uint8_t>(std::clamp<std::int64_t>(v, 0, 255)); }

std::string file_name(std::int64_t file) {
  return file < kGeneratedTrainFiles ? "data_batch_" + std::to_string(file + 1) + ".bin" : "test_batch.bin";
}

// One file's records: its labels (generated_labels) and their images.
std::vector<std::uint8_t> generate_file(std::int64_t file) {
  const std::int64_t n = kGeneratedImagesPerFile, rec = CifarDataset::record_bytes(CifarKind::cifar10);
  const std::vector<std::uint8_t> labels = generated_labels(file);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n * rec));
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint8_t* r = out.data() + i * rec;
    r[0] = static_cast<std::uint8_t>(labels[static_cast<std::size_t>(i)]);
    render_generated_image(mix_seed(kSeed, static_cast<std::uint64_t>(file), static_cast<std::uint64_t>(i) + 1),
                           labels[static_cast<std::size_t>(i)], r + 1);
  }
  return out;
}

void write_atomically(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  // A name no other thread or process uses, in the same folder so that the
  // rename cannot cross file systems.
  static std::atomic<std::uint64_t> counter{0};
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw DatasetError("generated: cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw DatasetError("generated: cannot move " + tmp.string() + " to " + path.string() + ": " + ec.message());
  }
}

}  // namespace

// Exactly kGeneratedImagesPerFile / 10 of each class, in an order shuffled
// from the file's own seed.
std::vector<std::uint8_t> generated_labels(std::int64_t file) {
  const std::int64_t n = kGeneratedImagesPerFile;
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    labels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i % kGeneratedClasses);
  Rng rng(mix_seed(kSeed, static_cast<std::uint64_t>(file)));
  for (std::int64_t i = n - 1; i > 0; --i) {
    std::swap(labels[static_cast<std::size_t>(i)], labels[rng.below(static_cast<std::uint64_t>(i + 1))]);
  }
  return labels;
}

GeneratedDataset::GeneratedDataset(fs::path dir, Split split, const DatasetOptions& options)
    : dir_(std::move(dir)), split_(split), options_(options), augment_(options.augment.value_or(split == Split::train)) {
  // The files' order: data_batch_1..5 for training, test_batch for test.
  const std::int64_t first = split == Split::train ? 0 : kGeneratedTrainFiles;
  const std::int64_t last = split == Split::train ? kGeneratedTrainFiles : kGeneratedTrainFiles + 1;
  for (std::int64_t file = first; file < last; ++file) {
    const std::vector<std::uint8_t> labels = generated_labels(file);
    labels_.insert(labels_.end(), labels.begin(), labels.end());
  }
}

GeneratedDataset::~GeneratedDataset() = default;

std::string GeneratedDataset::name() const {
  return "generated (" + std::string(to_string(split_)) + ", " + dir_.string() + ")";
}

ImageShape GeneratedDataset::image_shape() const { return {3, kSide, kSide}; }

Normalization GeneratedDataset::normalization() const {
  return CifarDataset::standard_normalization(CifarKind::cifar10);
}

const CifarDataset& GeneratedDataset::files() const {
  if (const CifarDataset* f = files_.load(std::memory_order_acquire)) return *f;
  // The first reader writes and loads them; the others wait for it. One
  // that throws leaves the next reader to try again.
  std::call_once(load_once_, [this] {
    ensure_generated_cifar10(dir_);
    loaded_ = std::make_unique<CifarDataset>(CifarKind::cifar10, dir_, split_, options_, "generated");
    if (loaded_->size() != size())
      throw DatasetError("generated: " + dir_.string() + " holds " + std::to_string(loaded_->size()) + " " +
                         std::string(to_string(split_)) + " images, not " + std::to_string(size()));
    // Files of another generator (an older Tidepool's) would give read()
    // other labels than label(), which a sim run reads alone.
    for (std::int64_t i = 0; i < size(); ++i)
      if (loaded_->label(i) != labels_[static_cast<std::size_t>(i)])
        throw DatasetError("generated: the files in " + dir_.string() + " are not the images this Tidepool generates "
                           "(image " + std::to_string(i) + "'s label differs): remove the folder to write them again");
    files_.store(loaded_.get(), std::memory_order_release);
  });
  return *files_.load(std::memory_order_acquire);
}

bool GeneratedDataset::read(std::int64_t index, float* image_chw, std::int32_t& label, Rng& rng) const {
  return files().read(index, image_chw, label, rng);
}

void render_generated_image(std::uint64_t seed, int label, std::uint8_t* rgb_planes) {
  Rng rng(seed);
  // Colours: any background; a foreground at least 160 away (summed over
  // channels) so the shape is always visible, whatever its hue.
  int bg[3], fg[3];
  for (int& c : bg) c = static_cast<int>(rng.below(256));
  bool found = false;
  for (int attempt = 0; attempt < 32 && !found; ++attempt) {
    for (int& c : fg) c = static_cast<int>(rng.below(256));
    found = std::abs(fg[0] - bg[0]) + std::abs(fg[1] - bg[1]) + std::abs(fg[2] - bg[2]) >= 160;
  }
  if (!found) {
    for (int c = 0; c < 3; ++c) fg[c] = bg[c] < 128 ? 255 : 0;
  }

  // Geometry in 1/16 pixels: half-size 6.5..12 px, aspect about 0.87..1.19,
  // centre anywhere that keeps the shape's unit square inside the image.
  const std::int64_t s = rng.between(104, 192);
  const std::int64_t a = rng.between(14, 19);
  const std::int64_t sx = s * a / 16, sy = s * 16 / a;
  const std::int64_t margin = kSub / 2;
  const std::int64_t cx = rng.between(sx + margin, kSide * kSub - sx - margin);
  const std::int64_t cy = rng.between(sy + margin, kSide * kSub - sy - margin);
  // A faint linear gradient over the background (not the shape), up to
  // about +-48 levels at the corners.
  const std::int64_t gx = rng.between(-24, 24), gy = rng.between(-24, 24);

  constexpr std::int64_t kPlane = kSide * kSide;
  for (std::int64_t y = 0; y < kSide; ++y) {
    for (std::int64_t x = 0; x < kSide; ++x) {
      // Coverage from a 2x2 grid of samples: soft edges, as a camera would give.
      int covered = 0;
      for (std::int64_t sy_off : {4, 12}) {
        for (std::int64_t sx_off : {4, 12}) {
          covered += inside(label, x * kSub + sx_off - cx, y * kSub + sy_off - cy, sx, sy) ? 1 : 0;
        }
      }
      const std::int64_t gradient = (gx * (x - kSide / 2) + gy * (y - kSide / 2)) / 16;
      for (int c = 0; c < 3; ++c) {
        const std::int64_t base = (bg[c] * (4 - covered) + fg[c] * covered) / 4;
        // Triangular noise in [-24, 24]: independent per pixel and channel.
        const std::int64_t noise = static_cast<std::int64_t>(rng.below(25) + rng.below(25)) - 24;
        rgb_planes[c * kPlane + y * kSide + x] = clamp_byte(base + gradient * (4 - covered) / 4 + noise);
      }
    }
  }
}

int ensure_generated_cifar10(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) {
    throw DatasetError("generated: cannot create folder " + dir.string());
  }
  const auto expected = static_cast<std::uintmax_t>(kGeneratedImagesPerFile * CifarDataset::record_bytes(CifarKind::cifar10));
  int written = 0;
  for (std::int64_t file = 0; file <= kGeneratedTrainFiles; ++file) {
    const fs::path path = dir / file_name(file);
    if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == expected && !ec) continue;
    write_atomically(path, generate_file(file));
    ++written;
  }
  return written;
}

}  // namespace tidepool::datasets
